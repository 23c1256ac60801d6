// The snippets of the "Observing on the main actor" article, compiled and run; `snippetsMatchTheArticle` keeps them
// word for word the article's.
import Dispatch
import Foundation
import Observation
import ReactiveDefaults
import Testing

#if canImport(SwiftUI)
  import SwiftUI
#endif

@MainActor @Observable final class SettingsModel {
  var volumeText = ""
  var summary = ""
  var volume = 0.5
}

// Snippet: The @Default wrapper and SwiftUI (the model; the view only where SwiftUI exists).
@MainActor @Observable final class PlayerModel {
  @ObservationIgnored @Default(.volume) var volume  // tracked all the same: reads go through the key's property
  var isEditing = false  // ordinary observable state beside it
}

#if canImport(SwiftUI)
  #if !os(tvOS)  // tvOS has no Slider
    struct PlayerView: View {
      @State private var model = PlayerModel()

      var body: some View {
        Slider(value: $model.volume, in: 0...1)  // writes UserDefaults; its changes from anywhere re-render
        Text(model.volume, format: .percent)
      }
    }
  #endif
#endif

@Suite struct MainActorArticleTests {
  @Test @MainActor func theArticleRunsAsWritten() async {
    let store = DefaultsStore.inMemory()

    let model = SettingsModel()
    let token = store.property(.volume).observe(on: .mainActor) { volume in
      model.volumeText = "\(Int(volume * 100)) %"  // main-actor state, no hop
    }
    #expect(model.volumeText == "50 %")

    let both = store.observe(.volume, .theme, on: .mainActor) { volume, theme in
      model.summary = "\(theme), \(Int(volume * 100)) %"
    }
    #expect(model.summary == "system, 50 %")

    let link = store.property(.volume).bind(to: model, \.volume)
    model.volume = 0.9  // saved to the suite once the main actor runs again

    let updates = Task { @MainActor in
      for await volume in store.property(.volume).values {
        model.volumeText = "\(Int(volume * 100)) %"
      }
    }
    // The main actor runs the binding's write, then the observers' deliveries.
    for _ in 0..<3 {
      await withCheckedContinuation { continuation in DispatchQueue.main.async { continuation.resume() } }
    }
    #expect(store[.volume] == 0.9)
    #expect(model.volumeText == "90 %")
    #expect(model.summary == "system, 90 %")
    updates.cancel()
    link.cancel()
    both.cancel()
    token.cancel()
  }

  @Test func snippetsMatchTheArticle() throws {
    try expectSnippets(ofArticle: "OnTheMainActor.md", in: #filePath, atLeast: 7)
  }
}
