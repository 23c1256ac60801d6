import Foundation
import ReactiveDefaults
import TestSupport
import Testing

/// Writes through one store and reads through a fresh store over the same suite name, then checks the
/// stored form through a plain `UserDefaults`.
private func roundTrip<Value: DefaultsValue & Equatable>(
  _ value: Value, default defaultValue: Value, sourceLocation: SourceLocation = #_sourceLocation
) throws {
  let suite = makeSuiteName()
  let key = DefaultsKey<Value>("key", default: defaultValue)
  do {
    let store = DefaultsStore(suiteName: suite)!
    store[key] = value
  }
  let fresh = DefaultsStore(suiteName: suite)!
  #expect(fresh[key] == value, sourceLocation: sourceLocation)
  #expect(try fresh.value(for: key) == value, sourceLocation: sourceLocation)
  // A second UserDefaults instance of the suite, made without the library, sees the same value.
  let plain = DefaultsStore(UserDefaults(suiteName: suite)!)
  #expect(plain[key] == value, sourceLocation: sourceLocation)
}

@Suite struct ValueCodingTests {
  /// A value and the default of its key, to round-trip (`roundTrip`); a failure points at its entry.
  struct RoundTrip: Sendable, CustomTestStringConvertible {
    let testDescription: String
    let check: @Sendable () throws -> Void

    init<Value: DefaultsValue & Equatable>(
      _ value: Value, default defaultValue: Value, sourceLocation: SourceLocation = #_sourceLocation
    ) {
      testDescription = "\(Value.self) \(String(reflecting: value))"
      check = { try roundTrip(value, default: defaultValue, sourceLocation: sourceLocation) }
    }
  }

  static let scalars: [RoundTrip] = [
    RoundTrip(true, default: false),
    RoundTrip(false, default: true),
    RoundTrip(42, default: 0),
    RoundTrip(Int.min, default: 0),
    RoundTrip(Int.max, default: 0),
    RoundTrip(Int8.min, default: 0),
    RoundTrip(Int16.max, default: 0),
    RoundTrip(Int32.min, default: 0),
    RoundTrip(Int64.max, default: 0),
    RoundTrip(UInt.max, default: 0),
    RoundTrip(UInt8.max, default: 0),
    RoundTrip(UInt16.max, default: 0),
    RoundTrip(UInt32.max, default: 0),
    RoundTrip(UInt64.max, default: 0),
    RoundTrip(0.1, default: 0),
    RoundTrip(-Double.greatestFiniteMagnitude, default: 0),
    RoundTrip(Double.infinity, default: 0),
    RoundTrip(Float(0.1), default: 0),
    RoundTrip("héllo wörld 🎛️", default: ""),
    RoundTrip("", default: "x"),
    RoundTrip(Data([0, 1, 2, 255]), default: Data()),
    // Whole seconds: a fresh instance reads the saved file, which keeps no fraction (see the disk test).
    RoundTrip(Date(timeIntervalSince1970: 1_700_000_000), default: Date(timeIntervalSince1970: 0)),
    RoundTrip(UUID(), default: UUID()),
  ]

  @Test(arguments: scalars) func scalarsRoundTrip(_ value: RoundTrip) throws {
    try value.check()
  }

  static let collectionsAndOptionals: [RoundTrip] = [
    RoundTrip([1, 2, 3], default: []),
    RoundTrip(["a", "b"], default: []),
    RoundTrip([[1], [2, 3]], default: []),
    RoundTrip(["a": 1, "b": 2], default: [:]),
    RoundTrip(["a": ["x": [true, false]]], default: [:]),
    RoundTrip([UUID(), UUID()], default: []),
    RoundTrip(Int?.some(5), default: nil),
    RoundTrip(String?.some("x"), default: nil),
    RoundTrip([URL(string: "https://example.com/a?b=c")!], default: []),
  ]

  @Test(arguments: collectionsAndOptionals) func collectionsAndOptionalsRoundTrip(_ value: RoundTrip) throws {
    try value.check()
  }

  @Test func rawRepresentableAndCodableRoundTrip() throws {
    for theme in Theme.allCases { try roundTrip(theme, default: .light) }
    try roundTrip(Layout(columns: 5, title: "wide / \"quoted\""), default: Layout())
    try roundTrip([Theme.dark, .light], default: [])
  }

  @Test func storedFormsAreNativePropertyListValues() throws {
    let (store, _) = makeStore()
    let plain = store.userDefaults
    store[.flag] = true
    #expect(plain.object(forKey: "flag") as? Bool == true)
    store[.count] = 7
    #expect(plain.object(forKey: "count") as? Int == 7)
    store[.volume] = 0.25
    #expect(plain.object(forKey: "volume") as? Double == 0.25)
    store[.name] = "n"
    #expect(plain.string(forKey: "name") == "n")
    store[.theme] = .dark
    #expect(plain.string(forKey: "theme") == "dark")
    store[.layout] = Layout(columns: 3, title: "t")
    #expect(plain.string(forKey: "layout") == #"{"columns":3,"title":"t"}"#)
    let list = DefaultsKey<[Int]>("list", default: [])
    store[list] = [1, 2]
    #expect(plain.array(forKey: "list") as? [Int] == [1, 2])
    let map = DefaultsKey<[String: String]>("map", default: [:])
    store[map] = ["k": "v"]
    #expect(plain.dictionary(forKey: "map") as? [String: String] == ["k": "v"])
    let id = DefaultsKey<UUID?>("id")
    let uuid = UUID()
    store[id] = uuid
    #expect(plain.string(forKey: "id") == uuid.uuidString)
    let date = DefaultsKey<Date?>("date")
    store[date] = Date(timeIntervalSince1970: 10)
    #expect(plain.object(forKey: "date") as? Date == Date(timeIntervalSince1970: 10))
    let data = DefaultsKey<Data?>("data")
    store[data] = Data([9])
    #expect(plain.data(forKey: "data") == Data([9]))
    store[.documentURL] = URL(string: "https://example.com/a%20b?q=1#f")
    // Plain `url(forKey:)` reads the library's keyed archive with scheme and host intact.
    #expect(plain.url(forKey: "documentUrl")?.absoluteString == "https://example.com/a%20b?q=1#f")
    #expect(plain.object(forKey: "documentUrl") is Data)
  }

  @Test(.linuxOnly) func valuesSurviveTheDiskRoundTrip() throws {
    let (store, _) = makeStore()
    defer { removeSuiteFile(store.suiteName!) }
    let float = DefaultsKey<Float>("float", default: 0)
    let big = DefaultsKey<Int>("big", default: 0)
    let huge = DefaultsKey<UInt64>("huge", default: 0)
    let list = DefaultsKey<[String]>("list", default: [])
    let date = DefaultsKey<Date?>("date")
    store[float] = 0.1
    store[big] = Int.max
    store[huge] = UInt64.max
    store[list] = ["a", "b"]
    store[date] = Date(timeIntervalSince1970: 1_700_000_000.75)
    store[.documentURL] = URL(string: "https://user@example.com:8080/p?q#f")
    store.flush()
    // Read the file the way another process would: parse the plist and decode what it holds.
    let file = preferencesFolder.appendingPathComponent("\(store.suiteName!).plist")
    let root = try PropertyListSerialization.propertyList(from: Data(contentsOf: file), format: nil)
    let stored = try #require(PropertyListValue(foundationObject: root))
    guard case .dictionary(let entries) = stored else { Issue.record("root is \(stored.kindName)"); return }
    #expect(entries["float"].flatMap(Float.init(propertyListValue:)) == 0.1)
    #expect(entries["big"].flatMap(Int.init(propertyListValue:)) == Int.max)
    #expect(entries["huge"].flatMap(UInt64.init(propertyListValue:)) == UInt64.max)
    #expect(entries["list"].flatMap([String].init(propertyListValue:)) == ["a", "b"])
    // The XML plist keeps whole seconds only (documented in the Gotchas).
    let readDate = try #require(entries["date"].flatMap(Date.init(propertyListValue:)))
    #expect(abs(readDate.timeIntervalSince1970 - 1_700_000_000.75) < 1)
    #expect(
      entries["documentUrl"].flatMap(URL.init(propertyListValue:))?.absoluteString
        == "https://user@example.com:8080/p?q#f")
  }

  @Test(arguments: [
    (PropertyListValue.integer(3), 3.0),
    (.real(2.5), 2.5),
    (.integer(Int128(1) << 53), 9_007_199_254_740_992),
  ])
  func doubleAcceptsExactIntegers(stored: PropertyListValue, expected: Double) {
    #expect(Double(propertyListValue: stored) == expected)
  }

  @Test func losslessConversionsOnly() {
    #expect(Double(propertyListValue: .integer((Int128(1) << 53) + 1)) == nil)
    #expect(Int(propertyListValue: .real(3)) == 3)
    #expect(Int(propertyListValue: .real(3.5)) == nil)
    #expect(Int8(propertyListValue: .integer(Int128(Int64.max))) == nil)
    #expect(UInt(propertyListValue: .integer(-1)) == nil)
    #expect(Float(propertyListValue: .real(1e300)) == nil)
    #expect(Float(propertyListValue: .real(.infinity)) == .infinity)
    #expect(Float(propertyListValue: .real(.nan))?.isNaN == true)
    #expect(Int(propertyListValue: .string("3.5")) == nil)
    #expect(Int(propertyListValue: .bool(true)) == nil)
  }

  /// Numeric strings read as numbers, as Apple's `integer(forKey:)` and `double(forKey:)` read them (a launch
  /// argument `-volume 0.9` is the string "0.9"), but exactly: the whole string, no locale, no hexadecimal.
  @Test(arguments: [
    ("0.9", 0.9), ("5", 5), ("-12", -12), ("1e3", 1000), ("+2.5", 2.5), (".5", 0.5), ("5.", 5), ("-0", 0),
    ("1E-2", 0.01),
  ])
  func numericStringsReadAsReals(text: String, expected: Double) {
    #expect(Double(propertyListValue: .string(text)) == expected)
    #expect(Float(propertyListValue: .string(text)) == Float(expected))
  }

  @Test(arguments: [
    "5 apples", "0x10", "0x1p3", " 5", "5 ", "", ".", "e3", "1e", "1e+", "nan", "inf", "infinity", "1e999", "١٢",
    "1,5", "1_000", "--1", "+-1",
  ])
  func otherStringsAreNotReals(text: String) {
    #expect(Double(propertyListValue: .string(text)) == nil)
    #expect(Int(propertyListValue: .string(text)) == nil)
  }

  @Test func numericStringsReadAsIntegersWithinRange() {
    #expect(Int(propertyListValue: .string("5")) == 5)
    #expect(Int(propertyListValue: .string("-12")) == -12)
    #expect(Int(propertyListValue: .string("1e3")) == 1000)
    #expect(Int(propertyListValue: .string("9223372036854775807")) == .max)
    #expect(Int(propertyListValue: .string("9223372036854775808")) == nil)
    #expect(UInt64(propertyListValue: .string("18446744073709551615")) == .max)
    #expect(UInt8(propertyListValue: .string("256")) == nil)
    #expect(UInt(propertyListValue: .string("-1")) == nil)
    #expect(Int8(propertyListValue: .string("-128")) == -128)
    #expect(Float(propertyListValue: .string("1e300")) == nil)
  }

  /// Through a store: a string in the suite (`rdefaults write d k 0.9` with no type flag) reads as the number, with
  /// no issue; a string that is not a number still reads as the default and is reported.
  @Test(arguments: Storage.allCases) func aNumericStringInTheSuiteReadsAsANumber(_ storage: Storage) throws {
    let (store, issues) = makeStore(storage)
    let raw = DefaultsKey<PropertyListValue?>("volume")
    store[raw] = .string("0.9")
    #expect(store[.volume] == 0.9)
    store[DefaultsKey<PropertyListValue?>("count")] = .string("5")
    #expect(store[.count] == 5)
    #expect(issues.values.isEmpty)
    store[raw] = .string("loud")
    #expect(store[.volume] == 0.5)
    #expect(throws: DefaultsError.typeMismatch(key: "volume", expected: "Double", found: "String")) {
      try store.value(for: .volume)
    }
  }

  @Test(arguments: [
    (PropertyListValue.bool(true), true), (.bool(false), false), (.integer(1), true), (.integer(0), false),
    (.string("YES"), true), (.string("NO"), false), (.string("true"), true), (.string("false"), false),
    (.string("yes"), true), (.real(1), true),
  ])
  func boolConversions(stored: PropertyListValue, expected: Bool) {
    #expect(Bool(propertyListValue: stored) == expected)
  }

  @Test(arguments: [PropertyListValue.integer(2), .string("maybe"), .data(Data()), .real(0.5)])
  func boolRejectsEverythingElse(stored: PropertyListValue) {
    #expect(Bool(propertyListValue: stored) == nil)
  }

  @Test func readsWhatCorelibsReturns() {
    // corelibs hands arrays back as [Optional<Any>] and dictionaries keyed by AnyHashable.
    let array: [Any?] = [1, "a", nil as Int?]
    #expect(PropertyListValue(foundationObject: [1, 2] as [Any?]) == .array([.integer(1), .integer(2)]))
    #expect(PropertyListValue(foundationObject: array) == nil)
    let dictionary: [AnyHashable: Any?] = ["a": 1, "b": [true] as [Any?]]
    #expect(
      PropertyListValue(foundationObject: dictionary)
        == .dictionary(["a": .integer(1), "b": .array([.bool(true)])]))
    #expect(PropertyListValue(foundationObject: Int64.max) == .integer(Int128(Int64.max)))
    #expect(PropertyListValue(foundationObject: NSNumber(value: 2.5)) == .real(2.5))
    #expect(PropertyListValue(foundationObject: NSObject()) == nil)
    #expect(PropertyListValue(foundationObject: [1: "non-string key"] as [AnyHashable: Any]) == nil)
  }

  @Test func nilElementsOfOptionalArraysAreLeftOut() throws {
    #expect(try [1, nil, 3].propertyListValue() == .array([.integer(1), .integer(3)]))
  }

  @Test func codableEncodingFailureKeepsTheStoredValue() throws {
    struct Point: DefaultsCodable, Equatable { var x: Double }
    let (store, issues) = makeStore()
    let key = DefaultsKey<Point>("point", default: Point(x: 0))
    store[key] = Point(x: 1)
    #expect(throws: DefaultsError.self) { try store.set(Point(x: .nan), for: key) }
    store[key] = Point(x: .infinity)
    #expect(store[key] == Point(x: 1))
    #expect(issues.values.count == 1)
    if case .encodingFailed(let name, let type, _)? = issues.values.first {
      #expect(name == "point")
      #expect(type == "Point")
    } else {
      Issue.record("expected encodingFailed, got \(issues.values)")
    }
  }
}
