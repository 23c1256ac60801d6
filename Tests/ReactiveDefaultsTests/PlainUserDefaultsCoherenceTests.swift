import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

/// One process, one truth: a plain `UserDefaults` write or removal of this process (any instance over the suite) is
/// what the library reads next, at once, and what it saves; observers hear it at the next `refresh()`. Linux: on Apple
/// platforms the preferences daemon keeps one copy, and key-value observing tells observers by itself.
@Suite(.linuxOnly) struct PlainUserDefaultsCoherenceTests {
  private static let count = DefaultsKey<Int>("count", default: 0)

  /// 20 rounds of: a write through the library, a plain write of the same key, a read (the plain value, at once);
  /// a plain removal, a read (the default, at once); after a save, the plain value still (every fifth round). Suites
  /// of 10 and 2,000 keys. (On 4b0b584 the library's own value was read until its save: 78 of 80 reads wrong.)
  @Test(arguments: [10, 2_000]) func aPlainWriteIsReadBackAtOnce(_ size: Int) throws {
    let (store, issues) = makeStore()
    let name = try #require(store.suiteName)
    for index in 0..<size { store[DefaultsKey<Int>("k\(index)", default: 0)] = index }
    let raw = try #require(UserDefaults(suiteName: name))
    var wrong: [String] = []
    for round in 0..<20 {
      store[Self.count] = 2 * round + 1
      raw.set(1000 + round, forKey: "count")
      if store[Self.count] != 1000 + round { wrong.append("round \(round): \(store[Self.count]) after a plain set") }
      if round.isMultiple(of: 5) {
        store.flush()
        if store[Self.count] != 1000 + round { wrong.append("round \(round): \(store[Self.count]) after the save") }
      }
      store[Self.count] = 7
      raw.removeObject(forKey: "count")
      if store[Self.count] != 0 { wrong.append("round \(round): \(store[Self.count]) after a plain removal") }
    }
    store.flush()
    #expect(store[Self.count] == 0)
    #expect(raw.object(forKey: "count") == nil)
    #expect(wrong.isEmpty, "\(wrong.count) wrong reads: \(wrong.prefix(6))")
    #expect(issues.values.isEmpty)
  }

  /// A write through the library, then a removal through the same `UserDefaults` instance the store wraps: the
  /// default (sindresorhus/Defaults' `testUserDefaultsSubscript`).
  @Test func aRemovalThroughTheWrappedInstanceIsReadAtOnce() throws {
    let name = makeSuiteName("coherence")
    let defaults = try #require(UserDefaults(suiteName: name))
    let store = DefaultsStore(defaults)
    store[Self.count] = 5
    defaults.removeObject(forKey: "count")
    #expect(store[Self.count] == 0)
    defaults.set(9, forKey: "count")
    #expect(store[Self.count] == 9)
  }

  /// The other way: a write through the library is what plain `UserDefaults` reads at once, every kind of value,
  /// with the instance's merged view built before each write (the library writes through corelibs'
  /// `CFPreferencesSetAppValue` itself, as `UserDefaults.set` does, without that method's bridging check).
  @Test func aLibraryWriteIsWhatPlainUserDefaultsReadsAtOnce() throws {
    let (store, issues) = makeStore()
    let raw = try #require(UserDefaults(suiteName: store.suiteName))
    let bytes = Data((0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 7) })
    let date = Date(timeIntervalSinceReferenceDate: 1_000)
    let cases: [(String, PropertyListValue?)] = [
      ("int", .integer(42)), ("text", .string("forty-two")), ("bytes", .data(bytes)), ("date", .date(date)),
      ("list", .array([.integer(1), .string("two")])), ("map", .dictionary(["a": .integer(1), "b": .bool(true)])),
      ("int", .integer(43)), ("bytes", .data(Data([1, 2, 3]))), ("int", nil), ("bytes", nil),
    ]
    for (key, value) in cases {
      _ = raw.object(forKey: key)
      #expect(store.hub.write(value.map(StorageWrite.set) ?? .remove, forKey: key) == nil)
      let read = raw.object(forKey: key).flatMap { PropertyListValue(foundationObject: $0) }
      #expect(read == value, "\(key): plain UserDefaults read \(String(describing: read))")
    }
    store.flush()
    #expect(raw.object(forKey: "int") == nil && raw.object(forKey: "text") as? String == "forty-two")
    #expect(issues.values.isEmpty)
  }

  /// swift-sharing's `AppStorageTests`, ported: a key written through the library, then by plain `UserDefaults`; a
  /// read gives the plain value, and an observer hears it at `refresh()`. Without a save between the two writes, the
  /// library's save 100 ms later re-reads observed keys too, and when that save's thread tells the observer first,
  /// `refresh()` finds the change recorded and returns while that thread calls the handler: hence a wait, not a look.
  /// With the library's write saved first, nothing but `refresh()` tells the observer (the wait fails without it).
  @Test(arguments: [false, true]) func everyKindOfValueWrittenPlainlyIsReadAndHeard(savedFirst: Bool) async throws {
    let (store, issues) = makeStore()
    let raw = try #require(UserDefaults(suiteName: store.suiteName))
    try await check(store, raw, savedFirst, "bool", false, true, plain: false)
    try await check(store, raw, savedFirst, "int", 0, 1, plain: 2)
    try await check(store, raw, savedFirst, "double", 0, 1.5, plain: 2.5)
    try await check(store, raw, savedFirst, "string", "", "a", plain: "b")
    try await check(store, raw, savedFirst, "data", Data(), Data([1]), plain: Data([2]))
    try await check(store, raw, savedFirst, "strings", [], ["a"], plain: ["b", "c"])
    let date = Date(timeIntervalSince1970: 1_000_000)
    try await check(store, raw, savedFirst, "date", .distantPast, date, plain: date.addingTimeInterval(60))
    #expect(issues.values.isEmpty)
  }

  private func check<Value: DefaultsValue & Equatable & Sendable>(
    _ store: DefaultsStore, _ raw: UserDefaults, _ savedFirst: Bool, _ name: String, _ defaultValue: Value,
    _ ours: Value, plain: Value, sourceLocation: SourceLocation = #_sourceLocation
  ) async throws {
    let key = DefaultsKey<Value>(name, default: defaultValue)
    let seen = Recorder<Value>()
    let token = store.property(key).observe { seen.append($0) }
    defer { token.cancel() }
    store[key] = ours
    if savedFirst { try await offThePool { try store.save() } }
    raw.set(try #require(try plain.propertyListValue()).foundationObject, forKey: name)
    #expect(store[key] == plain, sourceLocation: sourceLocation)
    store.refresh()
    #expect(await seen.wait(timeout: 10) { $0.last == plain }, "\(seen.values)", sourceLocation: sourceLocation)
  }
}
