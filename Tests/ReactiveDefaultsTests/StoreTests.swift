import Foundation
import ReactiveDefaults
import TestSupport
import Testing

@Suite struct StoreTests {
  @Test(arguments: Storage.allCases) func readsTheDefaultWhileAbsent(storage: Storage) throws {
    let (store, issues) = makeStore(storage)
    #expect(store[.volume] == 0.5)
    #expect(store[.documentURL] == nil)
    #expect(try store.value(for: .theme) == .system)
    #expect(issues.values.isEmpty)
  }

  @Test func writesAndResets() {
    let (store, _) = makeStore()
    store[.volume] = 0.8
    #expect(store[.volume] == 0.8)
    store.reset(.volume)
    #expect(store[.volume] == 0.5)
    #expect(store.userDefaults.object(forKey: "volume") == nil)
  }

  @Test func writingNilRemovesTheKey() {
    let (store, _) = makeStore()
    store[.nickname] = "x"
    store[.nickname] = nil
    #expect(store.userDefaults.object(forKey: "nickname") == nil)
    #expect(store[.nickname] == nil)
  }

  @Test func typeMismatchReadsTheDefaultAndIsReported() {
    let (store, issues) = makeStore()
    store.userDefaults.set("loud", forKey: "volume")
    #expect(store[.volume] == 0.5)
    let expected = DefaultsError.typeMismatch(key: "volume", expected: "Double", found: "String")
    #expect(throws: expected) { try store.value(for: .volume) }
    #expect(issues.values == [expected])
    store.userDefaults.set("purple", forKey: "theme")
    #expect(store[.theme] == .system)
    #expect(issues.last == .typeMismatch(key: "theme", expected: "Theme", found: "String"))
    #expect(expected.description.contains("volume"))
  }

  @Test(arguments: Storage.allCases) func emptyKeyNamesAreRefused(storage: Storage) {
    let (store, issues) = makeStore(storage)
    let empty = DefaultsKey<Int>("", default: 3)
    store[empty] = 5
    #expect(store[empty] == 3)
    #expect(throws: DefaultsError.invalidKey("")) { try store.set(5, for: empty) }
    #expect(issues.values.first == .invalidKey(""))
  }

  @Test(arguments: ["", "a/b", "../x", "..", "x..y", "/abs"])
  func invalidSuiteNamesAreRejected(_ name: String) {
    #expect(DefaultsStore(suiteName: name) == nil)
  }

  @Test(arguments: ["group.app", "com.example.My App", "ünïcode", "a.b.c"])
  func validSuiteNamesAreAccepted(_ name: String) {
    #expect(DefaultsStore(suiteName: name) != nil)
  }

  @Test func storesOverOneSuiteShareOneHub() {
    let name = makeSuiteName()
    let first = DefaultsStore(suiteName: name)!
    let second = DefaultsStore(suiteName: name)!
    #expect(first.userDefaults === second.userDefaults)
    // A store over the library's own instance of the suite joins the same hub.
    let third = DefaultsStore(first.userDefaults)
    let seen = Recorder<Double>()
    let token = third.property(.volume).observe(initial: false) { seen.append($0) }
    second[.volume] = 0.9
    #expect(seen.values == [0.9])
    withExtendedLifetime(token) {}
  }

  @Test func standardWrapsStandardDefaults() {
    #expect(DefaultsStore.standard.userDefaults === UserDefaults.standard)
    #expect(DefaultsStore(UserDefaults.standard).userDefaults === UserDefaults.standard)
  }

  @Test func leadingDotKeysAndUntypedEntryPoint() {
    let (store, _) = makeStore()
    let url = store.userDefaults.property(forKey: "documentUrl", as: URL.self)
    #expect(url.value == nil)
    url.value = URL(string: "https://example.com/a%20b")
    #expect(store[.documentURL]?.absoluteString == "https://example.com/a%20b")
    let name = store.userDefaults.property(forKey: "name", as: String.self)
    store[.name] = "n"
    #expect(name.value == "n")
  }

  @Test(.linuxOnly) func flushWritesTheSuiteFile() throws {
    let (store, _) = makeStore()
    defer { removeSuiteFile(store.suiteName!) }
    store[.count] = 11
    store.flush()
    let file = preferencesFolder.appendingPathComponent("\(store.suiteName!).plist")
    let root = try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
    #expect((root as? [String: Any])?["count"] as? Int == 11)
  }
}
