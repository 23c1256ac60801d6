// README.md's Rx blocks, read from the README itself and type-checked as a user would paste them, against the
// RxSwift and RxCocoa this run built (the default build has neither, so ReadmeTests leaves these blocks here).
#if RxCocoa
  import Foundation
  import TestSupport
  import Testing

  @Suite struct ReadmeRxTests {
    /// What the README's Rx block says is the app's own: a slider (a `UISlider` there, with RxCocoa's
    /// `rx.value`; a stand-in of the same shape here, where UIKit does not exist), documents the user chooses, and
    /// what the app does with one.
    static let prelude = """
      import Foundation
      import RxCocoa
      import RxSwift

      final class Slider: ReactiveCompatible {
        let value = BehaviorRelay<Float>(value: 0)
      }
      extension Reactive where Base == Slider {
        var value: ControlProperty<Float> {
          ControlProperty(values: base.value.asObservable(), valueSink: Binder(base) { $0.value.accept($1) })
        }
      }
      let slider = Slider()
      let chosenDocuments = PublishSubject<URL>()
      func open(_ url: URL) {}

      """

    @Test func theRxBlocksTypeCheck() async throws {
      let snippets = try ReadmeSnippet.all().filter { $0.kind == .rx }
      #expect(!snippets.isEmpty)
      for snippet in snippets {
        let result = try await offThePool { try snippet.typeCheck(prelude: Self.prelude) }
        #expect(result.status == 0, "\(snippet) does not compile as written:\n\(result.diagnostics)\n\(snippet.code)")
      }
    }
  }
#endif
