// The snippets of the Getting Started article, compiled and run. `snippetsMatchTheArticle` checks that every
// Swift block of the article stands in this file word for word, so neither can change without the other.
import Foundation
@_spi(Tools) import ReactiveDefaults
import Testing

// Snippet: Declare your keys
extension DefaultsKeys {
  static let volume = DefaultsKey<Double>("volume", default: 0.5)
  static let documentURL = DefaultsKey<URL?>("documentUrl")
  static let theme = DefaultsKey<Theme>("theme", default: .system)
}

enum Theme: String, DefaultsValue { case light, dark, system }

/// Removes a suite through the library: a plain `removePersistentDomain` would `synchronize()`, which on Linux
/// writes every suite of this process (the other tests' too) without the library's locks and checks.
private func removeSuite(_ name: String) {
  guard let store = DefaultsStore(suiteName: name) else { return }
  try? store.removeSuite()
  // The lock file stays when a suite goes; these suites are this test's alone.
  if let lock = store.fileURL.map({ $0.path + ".lock" }) { try? FileManager.default.removeItem(atPath: lock) }
}

/// The article's example: a player that keeps its volume in the store it is given.
struct Player {
  let settings: DefaultsStore
  func mute() { settings[.volume] = 0 }
}

@Suite(.serialized) struct GettingStartedTests {
  @Test func theArticleRunsAsWritten() async throws {
    defer {
      removeSuite("com.example.player")
      removeSuite("com.example.mirror")
    }
    // Snippet: Read and write through a store
    let store = DefaultsStore(suiteName: "com.example.player")!
    store[.volume] = 0.8
    print(store[.volume])  // 0.8
    store.reset(.volume)
    print(store[.volume])  // 0.5, the default
    #expect(store[.volume] == 0.5)

    // Snippet: type mismatch
    store.flush()
    store.userDefaults.set("loud", forKey: "volume")
    do {
      _ = try store.value(for: .volume)
    } catch {
      print(error)  // Key 'volume' holds String, not Double; …
    }
    #expect(throws: DefaultsError.self) { try store.value(for: .volume) }
    store.reset(.volume)

    // Snippet: Observe a property
    let volume = store.property(.volume)
    let token = volume.observe { value in
      print("volume is", value)
    }
    volume.value = 0.3  // volume is 0.3
    volume.value = 0.3  // nothing: the value did not change
    token.cancel()
    #expect(token.isCancelled)

    // Snippet: Stream it
    for await value in volume.values {
      print("volume is", value)  // volume is 0.3, then volume is 1.0
      if value == 1.0 { break }
      volume.value = 1.0
    }
    #expect(volume.value == 1.0)

    // Snippet: Bind two properties
    let mirror = DefaultsStore(suiteName: "com.example.mirror")!.property(.volume)
    let link = volume.bind(to: mirror)
    volume.value = 0.9
    print(mirror.value)  // 0.9
    link.cancel()
    #expect(mirror.value == 0.9)
  }

  // Snippet: Declare settings as properties
  @Test func settingsAsProperties() {
    defer { DefaultsStore.standard.reset(.volume, .theme) }
    final class PlayerSettings {
      @Default(.volume) var volume
      @Default(.theme) var theme
    }
    let settings = PlayerSettings()
    settings.volume = 0.4
    let both = DefaultsStore.standard.observe(.volume, .theme) { volume, theme in
      print("volume \(volume), theme \(theme)")  // volume 0.4, theme system
    }
    both.cancel()
    #expect(DefaultsStore.standard[.volume] == 0.4 && settings.theme == .system)
  }

  // Snippet: More of a store
  @Test func moreOfAStore() {
    defer { removeSuite("com.example.group") }
    let group = DefaultsStore(suiteName: "com.example.group")!  // nil for an invalid name
    group.issueHandler = { issue in print(issue) }  // type mismatches, failed saves
    group[.theme] = .dark
    group.refresh()  // reads and observers reflect every save completed before the call
    group.flush()  // save to disk now
    let url = UserDefaults.standard.property(forKey: "documentUrl", as: URL.self)  // DefaultsProperty<URL?>
    print(url.value?.absoluteString ?? "no document")
    #expect(group[.theme] == .dark)
    #expect(!DefaultsStore.isValidSuiteName("../x"))
  }

  // Snippet: Test with an in-memory store
  @Test func muteSilencesThePlayer() {
    let settings = DefaultsStore.inMemory()
    settings[.volume] = 0.8
    let player = Player(settings: settings)
    player.mute()
    #expect(settings[.volume] == 0)
  }

  @Test func snippetsMatchTheArticle() throws {
    try expectSnippets(ofArticle: "GettingStarted.md", in: #filePath, atLeast: 9)
  }
}
