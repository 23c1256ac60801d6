// The snippets of the "Observing on the main actor" article, compiled and run; `snippetsMatchTheArticle` keeps them
// word for word the article's.
import Dispatch
import Foundation
import Observation
import ReactiveDefaults
import Testing

@MainActor @Observable final class SettingsModel {
  var volumeText = ""
  var summary = ""
  var volume = 0.5
}

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
    try expectSnippets(ofArticle: "OnTheMainActor.md", in: #filePath, atLeast: 5)
  }
}
