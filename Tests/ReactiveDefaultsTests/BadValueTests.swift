import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// Stored values of every kind, valid and junk, to meet every value type.
private let junk: [PropertyListValue] = [
  .string("junk"), .string(""), .string("YES"), .integer(7), .integer(-1), .integer(1),
  .integer(Int128(Int64.max)), .integer(Int128(UInt64.max)), .real(0.5), .real(.nan), .real(.infinity),
  .real(-.infinity), .bool(true), .date(Date(timeIntervalSince1970: 0)), .data(Data([0xFF, 0xFE, 0x00])),
  .data(Data()), .array([]), .array([.integer(1), .string("x")]), .dictionary([:]),
  .dictionary(["a": .array([.dictionary(["b": .data(Data([1]))])])]),
  .array([.array([.array([.dictionary(["deep": .bool(false)])])])]),
]

/// Stores each junk value under a key of type `Value`, then checks the store's answer: the decoded value when
/// the type accepts it, else the default, a thrown `typeMismatch` naming the key and both types, and a report.
private func meetJunk<Value: DefaultsValue & Equatable>(
  _ type: Value.Type, default defaultValue: Value, sourceLocation: SourceLocation = #_sourceLocation
) {
  let (store, issues) = makeStore()
  let key = DefaultsKey<Value>("key", default: defaultValue)
  for stored in junk {
    store.userDefaults.set(stored.foundationObject, forKey: "key")
    let before = issues.count
    if let accepted = Value(propertyListValue: stored) {
      #expect(
        store[key] == accepted || accepted != accepted, "\(Value.self) ← \(stored)", sourceLocation: sourceLocation)
      continue
    }
    #expect(store[key] == defaultValue, "\(Value.self) ← \(stored)", sourceLocation: sourceLocation)
    let expected = DefaultsError.typeMismatch(key: "key", expected: "\(Value.self)", found: stored.kindName)
    #expect(throws: expected, sourceLocation: sourceLocation) { try store.value(for: key) }
    #expect(issues.values.dropFirst(before) == [expected], sourceLocation: sourceLocation)
  }
}

@Suite struct BadValueTests {
  @Test func everyTypeMeetsEveryWrongStoredType() {
    meetJunk(Bool.self, default: false)
    meetJunk(Int.self, default: 3)
    meetJunk(Int8.self, default: 3)
    meetJunk(Int16.self, default: 3)
    meetJunk(Int32.self, default: 3)
    meetJunk(Int64.self, default: 3)
    meetJunk(UInt.self, default: 3)
    meetJunk(UInt8.self, default: 3)
    meetJunk(UInt16.self, default: 3)
    meetJunk(UInt32.self, default: 3)
    meetJunk(UInt64.self, default: 3)
    meetJunk(Double.self, default: 3)
    meetJunk(Float.self, default: 3)
    meetJunk(String.self, default: "d")
    meetJunk(Data.self, default: Data([9]))
    meetJunk(Date.self, default: Date(timeIntervalSince1970: 9))
    meetJunk(URL.self, default: URL(string: "https://default.example")!)
    meetJunk(UUID.self, default: UUID())
    meetJunk([Int].self, default: [9])
    meetJunk([String: Int].self, default: ["d": 9])
    meetJunk(Int?.self, default: nil)
    meetJunk(Theme.self, default: .system)
    meetJunk(Layout.self, default: Layout())
    meetJunk([URL].self, default: [])
  }

  @Test func outOfRangeIntegersAreMismatches() throws {
    let (store, _) = makeStore()
    store.userDefaults.set(Int64.max, forKey: "small")
    let small = DefaultsKey<Int8>("small", default: 1)
    #expect(store[small] == 1)
    #expect(throws: DefaultsError.typeMismatch(key: "small", expected: "Int8", found: "Integer")) {
      try store.value(for: small)
    }
    store.userDefaults.set(-1, forKey: "unsigned")
    #expect(store[DefaultsKey<UInt>("unsigned", default: 2)] == 2)
  }

  @Test func nonFiniteNumbersAreValuesForRealKeysOnly() {
    let (store, _) = makeStore()
    store.userDefaults.set(Double.nan, forKey: "x")
    #expect(store[DefaultsKey<Double>("x", default: 0)].isNaN)
    #expect(store[DefaultsKey<Float>("x", default: 0)].isNaN)
    #expect(store[DefaultsKey<Int>("x", default: 4)] == 4)
    store.userDefaults.set(Double.infinity, forKey: "y")
    #expect(store[DefaultsKey<Float>("y", default: 0)] == .infinity)
    #expect(store[DefaultsKey<Int64>("y", default: 4)] == 4)
  }

  @Test func codableKeysRejectBadJSONAndBadBytes() {
    let (store, issues) = makeStore()
    store.userDefaults.set(Data([0xC3, 0x28, 0xFF]), forKey: "layout")
    #expect(store[.layout] == Layout())
    store.userDefaults.set(#"{"unrelated": true}"#, forKey: "layout")
    #expect(store[.layout] == Layout())
    store.userDefaults.set(#"{"columns": "two", "title": "t"}"#, forKey: "layout")
    #expect(store[.layout] == Layout())
    store.userDefaults.set(#"{"columns": 4, "title": "t"}"#, forKey: "layout")
    #expect(store[.layout] == Layout(columns: 4, title: "t"))
    #expect(issues.count == 3)
  }

  @Test func anArchiveOfSomethingElseIsNotAURL() throws {
    let (store, issues) = makeStore()
    for object in ["a string" as NSString, NSNumber(value: 3), ["k": "v"] as NSDictionary] as [NSObject] {
      let archive = try NSKeyedArchiver.archivedData(withRootObject: object, requiringSecureCoding: false)
      store.userDefaults.set(archive, forKey: "documentUrl")
      #expect(store[.documentURL] == nil)
    }
    #expect(issues.count == 3)
  }
}
