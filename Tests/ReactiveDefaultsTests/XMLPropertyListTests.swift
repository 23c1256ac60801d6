import Foundation
import Testing

@testable import ReactiveDefaults

/// The library's XML writer against CoreFoundation's (`PropertyListSerialization`), byte for byte.
@Suite struct XMLPropertyListTests {
  private func expectSameBytes(_ entries: [String: PropertyListValue], _ label: String = "") throws {
    let theirs = try PropertyListSerialization.data(
      fromPropertyList: entries.mapValues(\.foundationObject), format: .xml, options: 0)
    let ours = XMLPropertyList.encode(
      Dictionary(uniqueKeysWithValues: entries.map { (PropertyListKey($0.key), $0.value) }))
    let difference =
      "\(label)\n--- ours\n\(String(decoding: ours, as: UTF8.self))\n--- CoreFoundation\n"
      + String(decoding: theirs, as: UTF8.self)
    #expect(ours == theirs, "\(difference)")
  }

  @Test func everyKindOfValue() throws {
    try expectSameBytes([
      "b": .integer(1), "a": .string("x<&>\"'\u{1b}\t\n y"), "c": .real(0.1), "c2": .real(1), "c3": .real(1e300),
      "c4": .real(-0.0), "c5": .real(.nan), "c6": .real(.infinity), "c7": .real(-.infinity), "c8": .real(123456789.123),
      "c9": .real(-2.5e-300), "d": .date(Date(timeIntervalSince1970: 1.5)),
      "d2": .date(Date(timeIntervalSince1970: -0.5)), "d3": .date(Date(timeIntervalSinceReferenceDate: 0)),
      "e": .data(Data(repeating: 0xAB, count: 70)), "e2": .data(Data()), "e3": .data(Data([1])),
      "e4": .data(Data([1, 2])), "f": .array([.integer(1), .array([.integer(2)]), .dictionary([:]), .array([])]),
      "g": .bool(true), "h": .bool(false), "i": .integer(Int128(Int64.max)), "i2": .integer(Int128(Int64.min)),
      "k": .integer(Int128(UInt64.max)), "é": .string("ü😀"), "Z": .string(""), "😀": .string("astral key"),
      "\u{FF5E}": .string("after the astral key in UTF-16 order"), "": .string("empty key"),
    ])
  }

  /// Keys sorted as CoreFoundation sorts them (UTF-16 code units), across every boundary where UTF-8's byte order
  /// and UTF-16's differ or agree.
  @Test func keysSortByUTF16CodeUnits() {
    let scalars = [0x41, 0x7F, 0x80, 0x7FF, 0x800, 0xD7FF, 0xE000, 0xFF5E, 0xFFFD, 0x10000, 0x1F600, 0x10FFFF]
    let keys =
      scalars.flatMap { first in
        ["", "a", "\u{E000}", "\u{1F600}"].map { String(Unicode.Scalar(UInt32(first))!) + $0 }
      } + ["", "ab", "abc", "b"]
    let expected = keys.sorted { $0.utf16.lexicographicallyPrecedes($1.utf16) }
    #expect(keys.sorted(by: XMLPropertyList.precedesInUTF16Order) == expected)
    for left in keys {
      for right in keys {
        #expect(
          XMLPropertyList.precedesInUTF16Order(left, right) == left.utf16.lexicographicallyPrecedes(right.utf16),
          "\(Array(left.unicodeScalars)) vs \(Array(right.unicodeScalars))")
      }
    }
  }

  /// The quick look a new process takes at a suite file instead of parsing it: every file CoreFoundation writes
  /// passes; every cut of one, every other root, binary and garbage fail (and are then parsed in full).
  @Test func theFrameOfAWholeFileIsRecognisedAndEveryCutOneIsNot() throws {
    let domains: [[String: PropertyListValue]] = [
      [:], ["a": .integer(1)], ["nested": .dictionary(["inner": .array([.dictionary([:])])]), "z": .string("</dict>")],
    ]
    for entries in domains {
      let whole = try PropertyListSerialization.data(
        fromPropertyList: entries.mapValues(\.foundationObject), format: .xml, options: 0)
      #expect(XMLPropertyList.hasWholeDictionaryFrame(whole), "\(entries)")
      #expect(XMLPropertyList.hasWholeDictionaryFrame(Data("\u{FEFF}  ".utf8) + whole + Data("\n\n".utf8)))
      for length in 0..<whole.count - 1 {
        #expect(!XMLPropertyList.hasWholeDictionaryFrame(whole.prefix(length)), "cut at \(length) of \(entries)")
      }
      let binary = try PropertyListSerialization.data(
        fromPropertyList: entries.mapValues(\.foundationObject), format: .binary, options: 0)
      #expect(!XMLPropertyList.hasWholeDictionaryFrame(binary))
    }
    for root in ["<array><integer>1</integer></array>", "<string>x</string>", "<dict>", "<dict></array>"] {
      let text = #"<?xml version="1.0" encoding="UTF-8"?>\#n<plist version="1.0">\#n"# + root + "\n</plist>\n"
      #expect(!XMLPropertyList.hasWholeDictionaryFrame(Data(text.utf8)), "\(root)")
    }
    #expect(!XMLPropertyList.hasWholeDictionaryFrame(Data("<plist><dict></dict></plist>".utf8)), "no <?xml")
    // The first key, as the file names it (CoreFoundation writes keys sorted), entities replaced.
    let named = try PropertyListSerialization.data(
      fromPropertyList: ["b": 1, "a<&>\"'é": 2], format: .xml, options: 0)
    #expect(XMLPropertyList.frame(named) == .dictionary(firstKey: "a<&>\"'é"))
    let empty = try PropertyListSerialization.data(fromPropertyList: [String: Int](), format: .xml, options: 0)
    #expect(XMLPropertyList.frame(empty) == .emptyDictionary)
    let odd = #"<?xml version="1.0"?><plist version="1.0"><dict><key>&#65;</key><true/></dict></plist>"#
    #expect(XMLPropertyList.frame(Data(odd.utf8)) == .notWhole, "a reference the glance does not read: parsed")
    #expect(!XMLPropertyList.hasWholeDictionaryFrame(Data((0..<600).map { UInt8(truncatingIfNeeded: $0 &* 31) })))
  }

  /// Base64 lines at every depth (their length shrinks by 8 per level, down to 8 levels) and every length mod 3.
  @Test func dataAtEveryDepth() throws {
    for depth in 0...10 {
      for length in [0, 1, 2, 3, 50, 51, 52, 53, 57, 100, 301] {
        var value = PropertyListValue.data(Data((0..<length).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ depth) }))
        for _ in 0..<depth { value = .array([value]) }
        try expectSameBytes(["v": value], "depth \(depth), \(length) bytes")
      }
    }
  }

  @Test func randomDomains() throws {
    var generator = SystemRandomNumberGenerator()
    func randomString() -> String {
      let pool: [Character] = ["a", "Z", "0", " ", "&", "<", ">", "\"", "é", "😀", "\n", "\t", "\u{1}", "中"]
      return String((0..<Int.random(in: 0...12, using: &generator)).map { _ in pool.randomElement(using: &generator)! })
    }
    func randomValue(_ depth: Int) -> PropertyListValue {
      switch Int.random(in: 0..<(depth > 2 ? 7 : 9), using: &generator) {
      case 0: return .string(randomString())
      case 1: return .integer(Int128(Int64.random(in: .min ... .max, using: &generator)))
      case 2:
        let value = Double(bitPattern: UInt64.random(in: 0 ... .max, using: &generator))
        return .real(Bool.random(using: &generator) ? value : Double.random(in: -1e6...1e6, using: &generator))
      case 3: return .bool(Bool.random(using: &generator))
      case 4: return .date(Date(timeIntervalSince1970: Double.random(in: -3e10...2e11, using: &generator)))
      case 5:
        return .data(Data((0..<Int.random(in: 0...200, using: &generator)).map { _ in UInt8.random(in: 0...255) }))
      case 6: return .string(String(Int.random(in: 0...1_000_000, using: &generator)))
      case 7: return .array((0..<Int.random(in: 0...4, using: &generator)).map { _ in randomValue(depth + 1) })
      default:
        return .dictionary(
          Dictionary(
            (0..<Int.random(in: 0...4, using: &generator)).map { _ in
              (PropertyListKey(randomString()), randomValue(depth + 1))
            },
            uniquingKeysWith: { first, _ in first }))
      }
    }
    for round in 0..<300 {
      let entries = Dictionary(
        (0..<Int.random(in: 0...20, using: &generator)).map { _ in (randomString(), randomValue(0)) },
        uniquingKeysWith: { first, _ in first })
      try expectSameBytes(entries, "round \(round)")
    }
  }
}
