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
  /// A value type and the default of its key, to meet every junk value (`meetJunk`); a failure points at its entry.
  struct ValueType: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let meet: @Sendable () -> Void

    init<Value: DefaultsValue & Equatable>(
      _ type: Value.Type, default defaultValue: Value, sourceLocation: SourceLocation = #_sourceLocation
    ) {
      testDescription = "\(Value.self)"
      meet = { meetJunk(Value.self, default: defaultValue, sourceLocation: sourceLocation) }
    }
  }

  static let valueTypes: [ValueType] = [
    ValueType(Bool.self, default: false),
    ValueType(Int.self, default: 3),
    ValueType(Int8.self, default: 3),
    ValueType(Int16.self, default: 3),
    ValueType(Int32.self, default: 3),
    ValueType(Int64.self, default: 3),
    ValueType(UInt.self, default: 3),
    ValueType(UInt8.self, default: 3),
    ValueType(UInt16.self, default: 3),
    ValueType(UInt32.self, default: 3),
    ValueType(UInt64.self, default: 3),
    ValueType(Double.self, default: 3),
    ValueType(Float.self, default: 3),
    ValueType(String.self, default: "d"),
    ValueType(Data.self, default: Data([9])),
    ValueType(Date.self, default: Date(timeIntervalSince1970: 9)),
    ValueType(URL.self, default: URL(string: "https://default.example")!),
    ValueType(UUID.self, default: UUID()),
    ValueType([Int].self, default: [9]),
    ValueType([String: Int].self, default: ["d": 9]),
    ValueType(Int?.self, default: nil),
    ValueType(Theme.self, default: .system),
    ValueType(Layout.self, default: Layout()),
    ValueType([URL].self, default: []),
  ]

  @Test(arguments: valueTypes) func everyTypeMeetsEveryWrongStoredType(_ type: ValueType) {
    type.meet()
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
