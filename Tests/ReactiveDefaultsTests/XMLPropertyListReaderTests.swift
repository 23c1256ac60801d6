import Foundation
import Testing

@testable import ReactiveDefaults

/// The library's fast XML reader (``XMLPropertyListReader``): what it reads, it reads as CoreFoundation does; what it
/// does not know, it leaves to CoreFoundation (nil).
@Suite struct XMLPropertyListReaderTests {
  /// A value as CoreFoundation reads the document (nil where it refuses it), keys kept exact on Linux.
  static func coreFoundation(_ document: Data) -> PropertyListValue? {
    #if os(Linux)
      return CorelibsPreferences.propertyList(from: document).flatMap { PropertyListValue(foundationObject: $0) }
    #else
      return (try? PropertyListSerialization.propertyList(from: document, format: nil)).flatMap {
        PropertyListValue(foundationObject: $0)
      }
    #endif
  }

  /// Whether two values are the same, NaN included: the writer's bytes of each (it writes what CoreFoundation does).
  static func same(_ a: PropertyListValue?, _ b: PropertyListValue?) -> Bool {
    guard let a, let b else { return a == nil && b == nil }
    return XMLPropertyList.encode(["v": a]) == XMLPropertyList.encode(["v": b])
  }

  static func document(_ body: String, declaration: String = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n") -> Data {
    Data(
      (declaration
        + "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
        + "<plist version=\"1.0\">\n\(body)\n</plist>\n").utf8)
  }

  /// Every kind of value the library's writer (CoreFoundation's format) produces is read without CoreFoundation, and
  /// as CoreFoundation reads it.
  @Test func theWritersFilesAreReadAsCoreFoundationReadsThem() throws {
    var random = SeededRandom(state: 42)
    for round in 0..<300 {
      let entries = Dictionary(
        (0..<Int.random(in: 0...20, using: &random)).map { _ in
          (PropertyListKey(Self.randomText(&random)), Self.randomValue(0, &random))
        },
        uniquingKeysWith: { first, _ in first })
      let file = XMLPropertyList.encode(entries)
      let read = try #require(XMLPropertyListReader.parse(file), "round \(round): left to CoreFoundation")
      #expect(Self.same(read, Self.coreFoundation(file)), "round \(round)")
      #expect(Self.same(read, .dictionary(entries.mapValues(Self.asWritten))), "round \(round)")
    }
  }

  /// Keys that differ only by Unicode normalization stay two keys.
  @Test func keysKeepTheirExactScalars() throws {
    let file = XMLPropertyList.encode(["caf\u{E9}": .integer(1), "cafe\u{301}": .integer(2), "\u{212A}": .bool(true)])
    let read = try #require(XMLPropertyListReader.parse(file))
    #expect(read == .dictionary(["caf\u{E9}": .integer(1), "cafe\u{301}": .integer(2), "\u{212A}": .bool(true)]))
    #expect(read == Self.coreFoundation(file))
  }

  /// Forms that other writers use and the reader knows: the five entities, no encoding named, a byte-order mark, no
  /// DOCTYPE, white space around values.
  @Test(arguments: [
    "<dict><key>a&apos;&quot;&amp;&lt;&gt;</key><string>&lt;b&gt;</string></dict>",
    "<dict>\n  <key>x</key>\n  <integer>-0042</integer>\n  <key>y</key>\n  <real>+1.5E3</real>\n</dict>",
    "<array><true/><false/><string/><dict/><array/><data>AAEC\n\tAw==</data><date>2024-02-29T23:59:59Z</date></array>",
    "<dict><key>n</key><real>nan</real><key>i</key><real>-infinity</real><key>e</key><key>e2</key></dict>",
  ])
  func otherWritersFormsAreReadAsCoreFoundationReadsThem(_ body: String) {
    for declaration in [
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", "<?xml version=\"1.0\"?>", "\u{FEFF}<?xml version='1.0'?>",
    ] {
      let file = Self.document(body, declaration: declaration)
      let read = XMLPropertyListReader.parse(file)
      if body.contains("<key>e2") {
        #expect(read == nil)  // a key with no value: CoreFoundation's to refuse
      } else {
        #expect(read != nil, "\(declaration)\(body)")
        #expect(Self.same(read, Self.coreFoundation(file)), "\(declaration)\(body)")
      }
    }
  }

  /// What the reader does not know is left to CoreFoundation, which reads it as before (or refuses it).
  @Test(arguments: [
    "<dict><!-- a comment --><key>a</key><integer>1</integer></dict>",
    "<dict><key>a</key><string><![CDATA[<x>]]></string></dict>",
    "<dict><key>a</key><string>&#65;</string></dict>",
    "<dict><key>a</key><string>line\r\nbreak</string></dict>",
    "<dict><key>a</key><string>\u{1}</string></dict>",
    "<dict><key>a</key><integer>1</integer><key>a</key><integer>2</integer></dict>",
    "<dict><key>a</key><integer>18446744073709551615</integer></dict>",
    "<dict><key>a</key><integer> 1 </integer></dict>",
    "<dict><key>a</key><integer>0x10</integer></dict>",
    "<dict><key>a</key><real>inf</real></dict>",
    "<dict><key>a</key><date>2024-02-30T00:00:00Z</date></dict>",
    "<dict><key>a</key><date>2024-01-01</date></dict>",
    "<dict><key>a</key><data>AAE</data></dict>",
    "<dict ><key>a</key><true/></dict>",
    "<dict><key>a</key><true></true></dict>",
    "<dict><key>a</key><string>unclosed</dict>",
    "<dict><key>a</key><string>x</string></dict><dict/>",
    "<dict><key>a</key>",
    "<string>&bogus;</string>",
    "<dict><key>CF$UID</key><integer>3</integer></dict>",
    "<dict><key>a</key><string>\u{FEFF}text</string></dict>",
    "<dict><key>\u{FEFF}a</key><string>b</string></dict>",
  ])
  func formsItDoesNotKnowAreLeftToCoreFoundation(_ body: String) {
    #expect(XMLPropertyListReader.parse(Self.document(body)) == nil)
  }

  @Test func otherEncodingsNestingAndBytesAreLeftToCoreFoundation() {
    let body = "<dict><key>a</key><string>b</string></dict>"
    #expect(
      XMLPropertyListReader.parse(
        Self.document(body, declaration: "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>")) == nil)
    #expect(XMLPropertyListReader.parse(Self.document(body)) != nil)
    for declaration in [
      "<?xml version=\"1.0\" encoding=\"utf-8 \"?>", "<?xml version=\"1.0\" encoding=\"x-utf-8\"?>",
      "<?xml version=\"1.0\" encoding=\"macintosh\" x=\"utf-8\"?>", "<?xml version=\"1.0\" encoding=utf-8?>",
    ] {
      #expect(XMLPropertyListReader.parse(Self.document(body, declaration: declaration)) == nil, "\(declaration)")
    }
    #expect(XMLPropertyListReader.parse(Self.document(body, declaration: "<?xml encoding = 'UTF-8' ?>")) != nil)
    #expect(
      XMLPropertyListReader.parse(Self.document(body).replacing(Data("<plist ".utf8), with: Data("<plistX ".utf8)))
        == nil)
    #expect(
      XMLPropertyListReader.parse(
        Self.document("<dict><key>CF$UID</key><integer>3</integer><key>b</key><integer>1</integer></dict>")) != nil)
    #expect(XMLPropertyListReader.parse(Self.document("<dict><key>CF$UID</key><string>3</string></dict>")) != nil)
    let deep = String(repeating: "<array>", count: 70) + String(repeating: "</array>", count: 70)
    #expect(XMLPropertyListReader.parse(Self.document(deep)) == nil)
    let shallow = String(repeating: "<array>", count: 60) + String(repeating: "</array>", count: 60)
    #expect(XMLPropertyListReader.parse(Self.document(shallow)) != nil)
    var invalid = Self.document("<dict><key>a</key><string>XY</string></dict>")
    invalid[invalid.firstRange(of: Data("XY".utf8))!.lowerBound] = 0xC3  // a lead byte with no continuation
    #expect(XMLPropertyListReader.parse(invalid) == nil)
    #expect(XMLPropertyListReader.parse(Data()) == nil)
    #expect(XMLPropertyListReader.parse(Self.document("<dict/>") + Data("x".utf8)) == nil)
  }

  /// The writer's sort of many keys (by a 16-byte prefix, then in full) is CoreFoundation's order, for keys that share
  /// long prefixes and cross every UTF-8 / UTF-16 boundary.
  @Test func sortedIndicesAreUTF16Order() {
    let tails = ["", "a", "\u{E000}", "\u{FF5E}", "\u{1F600}", "\u{7F}", "\u{80}", "\0"]
    let stems = ["", "k", "0123456789abcde", "0123456789abcdef", "0123456789abcdefg", "\u{E000}\u{E000}\u{E000}"]
    let keys = stems.flatMap { stem in tails.flatMap { a in tails.map { b in PropertyListKey(stem + a + b) } } }
    let expected = keys.sorted { $0.string.utf16.lexicographicallyPrecedes($1.string.utf16) }
    #expect(XMLPropertyList.sortedIndices(of: keys).map { keys[$0] } == expected)
  }

  // MARK: generated values

  static func randomText(_ random: inout SeededRandom) -> String {
    let pool: [Character] = ["a", "Z", "0", " ", "&", "<", ">", "\"", "'", "é", "😀", "\n", "\t", "中", "\u{FF5E}"]
    return String((0..<Int.random(in: 0...12, using: &random)).map { _ in pool.randomElement(using: &random)! })
  }

  static func randomValue(_ depth: Int, _ random: inout SeededRandom) -> PropertyListValue {
    switch Int.random(in: 0..<(depth > 2 ? 7 : 9), using: &random) {
    case 0: return .string(randomText(&random))
    case 1: return .integer(Int128(Int64.random(in: .min ... .max, using: &random)))
    case 2:
      let value = Double(bitPattern: UInt64.random(in: 0 ... .max, using: &random))
      return .real(Bool.random(using: &random) ? value : Double.random(in: -1e6...1e6, using: &random))
    case 3: return .bool(Bool.random(using: &random))
    case 4: return .date(Date(timeIntervalSince1970: Double.random(in: -3e10...2e11, using: &random)))
    case 5:
      return .data(
        Data((0..<Int.random(in: 0...200, using: &random)).map { _ in UInt8.random(in: 0...255, using: &random) }))
    case 6: return .string(String(Int.random(in: 0...1_000_000, using: &random)))
    case 7: return .array((0..<Int.random(in: 0...4, using: &random)).map { _ in randomValue(depth + 1, &random) })
    default:
      return .dictionary(
        Dictionary(
          (0..<Int.random(in: 0...4, using: &random)).map { _ in
            (PropertyListKey(randomText(&random)), randomValue(depth + 1, &random))
          },
          uniquingKeysWith: { first, _ in first }))
    }
  }

  /// A value as the writer writes it, read back: dates in whole seconds (rounded down).
  static func asWritten(_ value: PropertyListValue) -> PropertyListValue {
    switch value {
    case .date(let date): return .date(Date(timeIntervalSince1970: (date.timeIntervalSince1970).rounded(.down)))
    case .array(let items): return .array(items.map(asWritten))
    case .dictionary(let entries): return .dictionary(entries.mapValues(asWritten))
    default: return value
    }
  }
}

/// A seeded generator (SplitMix64): the same values in every run, so that a failing run can be replayed.
struct SeededRandom: RandomNumberGenerator {
  var state: UInt64
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
}
