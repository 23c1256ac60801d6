// Built only with the RxSwift (or RxCocoa) trait, against the real RxSwift:
//   swift test --traits RxSwift      swift test --traits RxCocoa
#if RxSwift
  import ChildProcess
  import Dispatch
  import Foundation
  import RxSwift
  import Synchronization
  import TestSupport
  import Testing

  @testable import ReactiveDefaults

  /// Values from any thread, awaited with a timeout as the failure bound: the tests' one recorder.
  typealias Collected<Element: Sendable> = Recorder<Element>

  func makeStore() -> DefaultsStore {
    DefaultsStore(suiteName: "ReactiveDefaultsRxTests.\(UUID().uuidString)")!
  }

  extension DefaultsKeys {
    static let rxCount = DefaultsKey<Int>("count", default: 0)
  }

  @Suite struct RxSwiftTests {
    @Test func aPropertyIsAnObservableOfItsCurrentValueThenDistinctChanges() async {
      let store = makeStore()
      store[.rxCount] = 1
      let seen = Collected<Int>()
      let subscription = store.property(.rxCount).asObservable().subscribe(onNext: { seen.append($0) })
      store[.rxCount] = 2
      store[.rxCount] = 2
      store[.rxCount] = 3
      #expect(await seen.wait { $0 == [1, 2, 3] })
      #expect(store.hub.observerCount == 1)
      subscription.dispose()
      #expect(store.hub.observerCount == 0, "disposal removes the observer")
      store[.rxCount] = 4
      #expect(seen.values == [1, 2, 3])
    }

    @Test func aPropertyIsAnObserverThatRxCanSubscribe() {
      let store = makeStore()
      let property = store.property(.rxCount)
      let subscription = Observable.of(5, 6, 7).subscribe(property)
      #expect(store[.rxCount] == 7)
      subscription.dispose()
      property.asObserver().onNext(8)
      #expect(store[.rxCount] == 8)
      property.on(.error(NSError(domain: "test", code: 1)))  // a setting has no end: nothing happens
      #expect(store[.rxCount] == 8)
    }

    @Test func anotherProcessesWriteReachesAnRxSubscriber() async throws {
      let store = makeStore()
      defer { cleanUp(store) }
      let seen = Collected<Int>()
      let subscription = store.property(.rxCount).asObservable().subscribe(onNext: { seen.append($0) })
      defer { subscription.dispose() }
      let status = try await runRDefaults(["write", store.suiteName!, "count", "-int", "42"])
      #expect(status == 0)
      #expect(await seen.wait { $0.last == 42 })
    }
  }

  /// Runs the built `rdefaults` (beside the test bundle) on a thread of its own (``offThePool(_:)``).
  func runRDefaults(_ arguments: [String]) async throws -> Int32 {
    try await offThePool {
      let process = try ChildProcess(
        executable: toolsFolder.appendingPathComponent("rdefaults").path, arguments: arguments,
        environment: ProcessInfo.processInfo.environment)
      return process.waitUntilExit()
    }
  }

  func cleanUp(_ store: DefaultsStore) {
    guard let file = store.hub.file else { return }
    try? FileManager.default.removeItem(atPath: file.path)
    try? FileManager.default.removeItem(atPath: file.lockPath)
  }
#endif

#if RxCocoa
  import RxCocoa

  @Suite struct RxCocoaTests {
    /// The seed scenario: chosen document URLs bound into `UserDefaults.standard.rx.url(forKey:)`; a subscriber
    /// sees each distinct URL once, on the main thread.
    @Test func chosenDocumentURLsReachASubscriberOnceEach() async {
      let key = "documentUrl"
      defer { UserDefaults.standard.removeObject(forKey: key) }
      UserDefaults.standard.removeObject(forKey: key)
      let property = UserDefaults.standard.rx.url(forKey: key)
      let seen = Collected<URL?>()
      let onMain = Collected<Bool>()
      let subscription = property.subscribe(onNext: { url in
        onMain.append(isOnMainQueue())
        seen.append(url)
      })
      #expect(await seen.wait { $0 == [nil] }, "subscribed (on the main scheduler)")
      let a = URL(string: "https://user@example.com:8080/a%20b?q=1#f")!
      let b = URL(fileURLWithPath: "/tmp/document with spaces.txt")
      let chosen = Observable.from([a, a, b, b, a]).map { Optional($0) }
      let binding = chosen.bind(to: property)
      #expect(await seen.wait { $0.count >= 4 })
      #expect(seen.values == [nil, a, b, a])
      #expect(onMain.values.allSatisfy { $0 }, "ControlProperty delivers on the main scheduler")
      // Plain Foundation reads what was stored, scheme and host included.
      #expect(UserDefaults.standard.url(forKey: key) == a)
      binding.dispose()
      subscription.dispose()
    }

    /// The seed scenario done right: picked documents bound into `rx.document(forKey:)` as references; after a
    /// "restart" (a new instance of the suite, a new property) the document opens again; once it is gone, the property
    /// emits nil and the problem is reported.
    @Test func pickedDocumentsOpenAgainAfterARestart() async throws {
      let suite = "ReactiveDefaultsRxTests.\(UUID().uuidString)"
      let file = URL(fileURLWithPath: NSTemporaryDirectory() + "picked-\(UUID().uuidString).txt")
      try Data("chosen".utf8).write(to: file)
      defer { try? FileManager.default.removeItem(at: file) }
      let instance = UserDefaults(suiteName: suite)!
      defer { instance.removePersistentDomain(forName: suite) }
      let picked = PublishSubject<URL>()
      let document = instance.rx.document(forKey: "documentUrl")  // holds the instance weakly
      let binding = picked.compactMap { try? DocumentReference(url: $0) }.bind(to: document)
      let seen = Collected<DocumentReference?>()
      let subscription = document.subscribe(onNext: { seen.append($0) })
      #expect(await seen.wait { $0 == [nil] })
      picked.onNext(file)
      #expect(await seen.wait { $0.count == 2 })
      #expect(try seen.last??.withAccess { try Data(contentsOf: $0) } == Data("chosen".utf8))
      subscription.dispose()
      binding.dispose()

      let defaults = UserDefaults(suiteName: suite)!
      let relaunched = Collected<DocumentReference?>()
      let again = defaults.rx.document(forKey: "documentUrl").subscribe(onNext: { relaunched.append($0) })
      #expect(await relaunched.wait { $0.count == 1 })
      #expect(relaunched.values.first??.url == file.standardizedFileURL)
      again.dispose()

      try FileManager.default.removeItem(at: file)
      let store = DefaultsStore(defaults)
      let issues = Collected<DefaultsError>()
      store.issueHandler = { issues.append($0) }
      let gone = Collected<DocumentReference?>()
      let third = defaults.rx.document(forKey: "documentUrl").subscribe(onNext: { gone.append($0) })
      #expect(await gone.wait { $0 == [nil] })
      if isLinux {
        // (On Apple platforms the library cannot tell a suite instance's name: the property's store is its own.)
        #expect(await issues.wait { $0.count == 1 })
      }
      third.dispose()
      withExtendedLifetime((store, instance)) {}
    }

    @Test func aWriteThroughTheCoreAPIReachesTheControlProperty() async {
      let store = makeStore()
      let seen = Collected<Int>()
      let subscription = store.rx.property(.rxCount).subscribe(onNext: { seen.append($0) })
      #expect(await seen.wait { $0 == [0] })
      store[.rxCount] = 9
      #expect(await seen.wait { $0 == [0, 9] })
      subscription.dispose()
      #expect(await waitForObserverCount(store, 0))
    }

    @Test func defaultForKeyEmitsOnlyForItsKeyAndNeverRepeatsNil() async {
      let suite = "ReactiveDefaultsRxTests.\(UUID().uuidString)"
      let defaults = UserDefaults(suiteName: suite)!
      let property: ControlProperty<String?> = defaults.rx.default(forKey: "name")
      let seen = Collected<String?>()
      let subscription = property.subscribe(onNext: { seen.append($0) })
      #expect(await seen.wait { $0 == [nil] }, "subscribed (on the main scheduler)")
      let store = DefaultsStore(defaults)
      store[DefaultsKey<String?>("other")] = "x"
      store[DefaultsKey<String?>("name")] = nil
      store[DefaultsKey<String?>("name")] = "bob"
      #expect(await seen.wait { $0.count >= 2 })
      #expect(seen.values == [nil, "bob"])
      subscription.dispose()
    }

    @Test func rxCocoaBindsIntoAPropertyDirectly() {
      let store = makeStore()
      let binding = Observable.of(1, 2).bind(to: store.property(.rxCount))
      #expect(store[.rxCount] == 2)
      binding.dispose()
    }

    /// RxCocoa's contract for a control's property (its tests' `ensurePropertyDeallocated`, on `UserDefaults`): with
    /// a binding into the property and a subscription to it, both left in place, the instance is deallocated when
    /// its last owner lets go, and the property completes; the subscription saw the bound value. On a suite the
    /// library can name (Linux), and as on Apple platforms, where it cannot (a store over the instance held weakly).
    @MainActor @Test(arguments: [true, false]) func aPropertyOfAnInstanceKeepsItNotAlive(suiteIsTold: Bool) async {
      let suite = "ReactiveDefaultsRxTests.\(UUID().uuidString)"
      defer { UserDefaults(suiteName: suite)?.removePersistentDomain(forName: suite) }
      let completed = Collected<Bool>()
      let seen = Collected<Int?>()
      let bound = BehaviorSubject<Int?>(value: 5)
      weak var gone: UserDefaults?
      let (binding, subscription) = { () -> (any Disposable, any Disposable) in
        let defaults = UserDefaults(suiteName: suite)!
        gone = defaults
        let property: ControlProperty<Int?> = makeControlProperty(
          DefaultsKey<Int?>("n"), lettingGoOf: defaults, suiteIsTold: suiteIsTold)
        let binding = bound.bind(to: property)
        // On the main actor: ControlProperty subscribes here and now.
        let subscription = property.subscribe(
          onNext: { seen.append($0) }, onCompleted: { completed.append(true) })
        return (binding, subscription)
      }()
      #expect(gone == nil, "neither the binding nor the subscription keeps the instance")
      #expect(await completed.wait { $0 == [true] }, "the property completes once the instance is gone")
      #expect(seen.values.last == 5, "\(seen.values)")
      bound.onNext(6)  // dropped: nothing to write to
      binding.dispose()
      subscription.dispose()
      #expect(UserDefaults(suiteName: suite)?.object(forKey: "n") as? Int == 5)
    }

    /// A binding alone (RxCocoa's `ensureControlObserverHasWeakReference`) keeps nothing alive either, and a write
    /// bound in while the instance lives reaches it.
    @Test func aBindingIntoAnInstancesPropertyKeepsItNotAlive() {
      let suite = "ReactiveDefaultsRxTests.\(UUID().uuidString)"
      defer { UserDefaults(suiteName: suite)?.removePersistentDomain(forName: suite) }
      weak var gone: UserDefaults?
      let bag = DisposeBag()
      do {
        let defaults = UserDefaults(suiteName: suite)!
        gone = defaults
        let property: ControlProperty<String?> = defaults.rx.default(forKey: "name")
        Observable.just("ann").bind(to: property).disposed(by: bag)
        #expect(defaults.string(forKey: "name") == "ann")
      }
      #expect(gone == nil)
    }

    @Test func theControlPropertyCompletesWhenItsStoreGoesAway() async {
      let completed = Collected<Bool>()
      var store: DefaultsStore? = makeStore()
      let subscription = store!.rx.property(.rxCount).subscribe(onCompleted: { completed.append(true) })
      store = nil
      #expect(await completed.wait { $0 == [true] })
      subscription.dispose()
    }
  }

  private let mainQueueKey: DispatchSpecificKey<Bool> = {
    let key = DispatchSpecificKey<Bool>()
    DispatchQueue.main.setSpecific(key: key, value: true)
    return key
  }()

  /// Whether this code runs on the main queue (`Thread.isMainThread` is not reliable on Linux, as RxSwift notes).
  func isOnMainQueue() -> Bool {
    DispatchQueue.getSpecific(key: mainQueueKey) == true
  }

  /// The observer count drops when disposal reaches the main scheduler: wait for it.
  func waitForObserverCount(_ store: DefaultsStore, _ count: Int) async -> Bool {
    for _ in 0..<3_000 where store.hub.observerCount != count {
      await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
    }
    return store.hub.observerCount == count
  }
#endif
