import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Writes XML property lists byte for byte as CoreFoundation's writer does (`CFPropertyListCreateData`, which both
/// `PropertyListSerialization` and corelibs' preferences saves use), twenty times faster: 100,000 keys take
/// about 1.9 s there, most of a large save. Being byte-identical matters: a save compares the file corelibs
/// wrote with the library's journal to tell whether corelibs held writes the library did not know of.
///
/// The format, as CoreFoundation writes it: keys sorted by UTF-16 code units; one tab per level; `&`, `<`, `>`
/// escaped in strings and keys (nothing else); integers in decimal; reals as `%.17g`, except `0.0`, `nan`,
/// `+infinity`, `-infinity`; dates in UTC, whole seconds (rounded down), `%04d-%02d-%02dT%02d:%02d:%02dZ`;
/// data in base64, in lines of at most 76 characters less 8 per level of indentation (at most 8 levels), each
/// indented; empty containers as `<dict/>` and `<array/>`.
enum XMLPropertyList {
  static func encode(_ entries: [PropertyListKey: PropertyListValue]) -> Data {
    var writer = Writer()
    writer.append(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
        + "<!DOCTYPE plist PUBLIC \"-//Apple//DTD PLIST 1.0//EN\" \"http://www.apple.com/DTDs/PropertyList-1.0.dtd\">\n"
        + "<plist version=\"1.0\">\n")
    if entries.isEmpty {
      writer.append("<dict/>\n")
    } else {
      // The top level by hand, to report progress on a large domain (an import of a million keys).
      Progress.report(.sorting, done: 0, of: entries.count)
      let pairs = Array(entries)
      let order = sortedIndices(of: pairs.map(\.key))
      writer.bytes.reserveCapacity(entries.count * 48)
      writer.append("<dict>\n")
      for (index, position) in order.enumerated() {
        if index & 0x3FFF == 0 { Progress.report(.encoding, done: index, of: order.count) }
        writer.element("key", pairs[position].key.string, indent: 1)
        writer.write(pairs[position].value, indent: 1)
      }
      writer.append("</dict>\n")
    }
    writer.append("</plist>\n")
    return Data(writer.bytes)
  }

  /// One value as the XML a property list holds it in (keys sorted): the same bytes for the same value on every
  /// device, which the sync ranks entries by when their stamps are equal (``SyncEntry/outranks(_:)``).
  static func encode(value: PropertyListValue) -> [UInt8] {
    var writer = Writer()
    writer.write(value, indent: 0)
    return writer.bytes
  }

  /// What the frame of an XML property list says (``frame(_:)``).
  enum Frame: Equatable {
    /// Cut short, binary, not XML, or another root.
    case notWhole
    case emptyDictionary
    /// A dictionary whose first key (as the file names it first) is this.
    case dictionary(firstKey: String)
  }

  /// Whether `bytes` look like a whole XML property list whose root is a dictionary, judged by its frame alone:
  /// after an optional byte-order mark and white space, `<?xml`; then, within the first kilobyte, `<plist`, its `>`,
  /// white space and `<dict>` (or `<dict/>`), and for a dictionary a first `<key>`; at the end, `</dict>` (or that
  /// `<dict/>`), white space and `</plist>`, with white space after. A file cut short, binary, or holding another root
  /// is `notWhole`; what lies between is not looked at.
  static func frame(_ bytes: Data) -> Frame {
    bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) -> Frame in
      let bytes = buffer.bindMemory(to: UInt8.self)
      func isSpace(_ byte: UInt8) -> Bool { byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D }
      func matches(_ text: StaticString, at index: Int) -> Bool {
        let count = text.utf8CodeUnitCount
        guard index >= 0, index + count <= bytes.count else { return false }
        return memcmp(bytes.baseAddress! + index, text.utf8Start, count) == 0
      }
      var start = 0
      if matches("\u{FEFF}", at: 0) { start = 3 }
      while start < bytes.count, isSpace(bytes[start]) { start += 1 }
      guard matches("<?xml", at: start) else { return .notWhole }
      // The opening: `<plist`, then its `>`, then the root.
      let searchEnd = min(bytes.count, start + 1024)
      guard var index = (start..<searchEnd).first(where: { matches("<plist", at: $0) }) else { return .notWhole }
      while index < searchEnd, bytes[index] != UInt8(ascii: ">") { index += 1 }
      index += 1
      while index < bytes.count, isSpace(bytes[index]) { index += 1 }
      let emptyRoot = matches("<dict/>", at: index)
      guard emptyRoot || matches("<dict>", at: index) else { return .notWhole }
      let rootEnd = index + (emptyRoot ? 7 : 6)
      // The closing: `</plist>`, and before it the root's end.
      var end = bytes.count
      while end > rootEnd, isSpace(bytes[end - 1]) { end -= 1 }
      end -= 8
      guard end >= rootEnd, matches("</plist>", at: end) else { return .notWhole }
      while end > rootEnd, isSpace(bytes[end - 1]) { end -= 1 }
      if emptyRoot { return end == rootEnd ? .emptyDictionary : .notWhole }
      guard end - 7 >= rootEnd, matches("</dict>", at: end - 7) else { return .notWhole }
      if end - 7 == rootEnd { return .emptyDictionary }
      // The first key: `<key>`, text without markup, `</key>`.
      var keyStart = rootEnd
      while keyStart < end, isSpace(bytes[keyStart]) { keyStart += 1 }
      guard matches("<key>", at: keyStart) else { return .notWhole }
      keyStart += 5
      var keyEnd = keyStart
      while keyEnd < end, bytes[keyEnd] != UInt8(ascii: "<") { keyEnd += 1 }
      guard matches("</key>", at: keyEnd),
        let raw = String(validating: UnsafeBufferPointer(rebasing: bytes[keyStart..<keyEnd]), as: UTF8.self),
        let key = unescaped(raw)
      else { return .notWhole }
      return .dictionary(firstKey: key)
    }
  }

  /// Whether `bytes` have the frame of a whole XML property list whose root is a dictionary (``frame(_:)``).
  static func hasWholeDictionaryFrame(_ bytes: Data) -> Bool {
    frame(bytes) != .notWhole
  }

  /// XML text with its five named entities replaced; nil when it holds any other reference.
  private static func unescaped(_ text: String) -> String? {
    guard text.contains("&") else { return text }
    var result = ""
    var rest = Substring(text)
    while let ampersand = rest.firstIndex(of: "&") {
      result += rest[..<ampersand]
      rest = rest[ampersand...]
      guard
        let entity = [("&amp;", "&"), ("&lt;", "<"), ("&gt;", ">"), ("&quot;", "\""), ("&apos;", "'")]
          .first(where: { rest.hasPrefix($0.0) })
      else { return nil }
      result += entity.1
      rest = rest.dropFirst(entity.0.count)
    }
    return result + rest
  }

  /// Whether `a` sorts before `b` by UTF-16 code units, CoreFoundation's order of keys, compared on UTF-8 bytes
  /// (sorting 10,000 keys through `utf16` views took most of an encode). UTF-8 bytes sort as code points do, and so
  /// does UTF-16 except that its surrogates (for U+10000 and up) come before U+E000–U+FFFF: where the first
  /// difference sets the lead byte of one of those (EE or EF) against that of the other (F0 to F4), the order turns.
  static func precedesInUTF16Order(_ a: String, _ b: String) -> Bool {
    // Both texts' bytes in memory (native and small strings, the usual case): compared where they are, no copy.
    let compared: Bool?? = a.utf8.withContiguousStorageIfAvailable { x in
      b.utf8.withContiguousStorageIfAvailable { y in precedesInUTF16Order(x, y) }
    }
    if let compared = compared ?? nil { return compared }
    return precedesInUTF16Order(Array(a.utf8), Array(b.utf8))
  }

  /// The positions of `keys` in CoreFoundation's order (``precedesInUTF16Order(_:_:)-(String,String)``).
  ///
  /// Sorting 100,000 keys with that comparison took a fifth of an import: each is first given the first 16 bytes of
  /// its UTF-8 with the lead bytes EE and EF raised above F4 (to F5, F6: never bytes of UTF-8), so that those bytes
  /// compare as UTF-16 code units do; most pairs differ there, and only a tie compares the whole keys.
  static func sortedIndices(of keys: [PropertyListKey]) -> [Int] {
    struct Prefixed {
      var high: UInt64
      var low: UInt64
      var index: Int
    }
    func prefix(_ text: String) -> (UInt64, UInt64) {
      var words: (UInt64, UInt64) = (0, 0)
      for (offset, byte) in text.utf8.prefix(16).enumerated() {
        let raised = UInt64(byte == 0xEE ? 0xF5 : byte == 0xEF ? 0xF6 : byte)
        if offset < 8 {
          words.0 |= raised << (56 - 8 * offset)
        } else {
          words.1 |= raised << (56 - 8 * (offset - 8))
        }
      }
      return words
    }
    var prefixed = keys.indices.map { index in
      let (high, low) = prefix(keys[index].string)
      return Prefixed(high: high, low: low, index: index)
    }
    prefixed.sort { a, b in
      if a.high != b.high { return a.high < b.high }
      if a.low != b.low { return a.low < b.low }
      return keys[a.index] < keys[b.index]
    }
    return prefixed.map(\.index)
  }

  /// ``precedesInUTF16Order(_:_:)-(String,String)`` on UTF-8 bytes.
  private static func precedesInUTF16Order<Bytes: RandomAccessCollection<UInt8>>(_ x: Bytes, _ y: Bytes) -> Bool
  where Bytes.Index == Int {
    let common = Swift.min(x.count, y.count)
    var index = 0
    while index < common, x[x.startIndex + index] == y[y.startIndex + index] { index += 1 }
    guard index < common else { return x.count < y.count }
    let (left, right) = (x[x.startIndex + index], y[y.startIndex + index])
    if (0xEE...0xEF).contains(left) && right >= 0xF0 { return false }
    if (0xEE...0xEF).contains(right) && left >= 0xF0 { return true }
    return left < right
  }

  private struct Writer {
    var bytes: [UInt8] = []

    init() {
      bytes.reserveCapacity(4096)
    }

    mutating func append(_ text: String) {
      bytes.append(contentsOf: text.utf8)
    }

    mutating func indent(_ level: Int) {
      bytes.append(contentsOf: repeatElement(UInt8(ascii: "\t"), count: level))
    }

    mutating func escaped(_ text: String) {
      for byte in text.utf8 {
        switch byte {
        case UInt8(ascii: "&"): append("&amp;")
        case UInt8(ascii: "<"): append("&lt;")
        case UInt8(ascii: ">"): append("&gt;")
        default: bytes.append(byte)
        }
      }
    }

    mutating func element(_ name: StaticString, _ content: String, indent level: Int) {
      indent(level)
      bytes.append(UInt8(ascii: "<"))
      append(name)
      bytes.append(UInt8(ascii: ">"))
      escaped(content)
      bytes.append(contentsOf: [UInt8(ascii: "<"), UInt8(ascii: "/")])
      append(name)
      bytes.append(contentsOf: [UInt8(ascii: ">"), UInt8(ascii: "\n")])
    }

    mutating func append(_ text: StaticString) {
      text.withUTF8Buffer { bytes.append(contentsOf: $0) }
    }

    mutating func write(_ value: PropertyListValue, indent level: Int) {
      switch value {
      case .dictionary(let entries):
        indent(level)
        guard !entries.isEmpty else { return append("<dict/>\n") }
        append("<dict>\n")
        for (key, value) in entries.sorted(by: { $0.key < $1.key }) {
          element("key", key.string, indent: level + 1)
          write(value, indent: level + 1)
        }
        indent(level)
        append("</dict>\n")
      case .array(let items):
        indent(level)
        guard !items.isEmpty else { return append("<array/>\n") }
        append("<array>\n")
        for item in items { write(item, indent: level + 1) }
        indent(level)
        append("</array>\n")
      case .string(let text): element("string", text, indent: level)
      case .integer(let number):
        element("integer", Int64(exactly: number).map { String($0) } ?? String(number), indent: level)
      case .real(let number): element("real", XMLPropertyList.real(number), indent: level)
      case .bool(let flag):
        indent(level)
        append(flag ? "<true/>\n" : "<false/>\n")
      case .date(let date): element("date", XMLPropertyList.date(date), indent: level)
      case .data(let data):
        indent(level)
        append("<data>\n")
        base64Lines(data, indent: level)
        indent(level)
        append("</data>\n")
      }
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// CoreFoundation's own loop: a line is flushed once it holds `76 - 8 × indent` characters or more, checked
    /// after each input byte (so a line can run one character over).
    mutating func base64Lines(_ data: Data, indent level: Int) {
      let level = min(level, 8)
      let limit = 76 - 8 * level
      let table = Self.alphabet
      var line: [UInt8] = []
      line.reserveCapacity(80)
      var previous: UInt8 = 0
      var index = 0
      for byte in data {
        switch index % 3 {
        case 0: line.append(table[Int((byte >> 2) & 0x3F)])
        case 1: line.append(table[Int(((UInt16(previous) << 8 | UInt16(byte)) >> 4) & 0x3F)])
        default:
          line.append(table[Int(((UInt16(previous) << 8 | UInt16(byte)) >> 6) & 0x3F)])
          line.append(table[Int(byte & 0x3F)])
        }
        previous = byte
        index += 1
        if line.count >= limit {
          indent(level)
          bytes.append(contentsOf: line)
          bytes.append(UInt8(ascii: "\n"))
          line.removeAll(keepingCapacity: true)
        }
      }
      switch index % 3 {
      case 1:
        line.append(table[Int((previous << 4) & 0x30)])
        line.append(contentsOf: "==".utf8)
      case 2:
        line.append(table[Int((previous << 2) & 0x3C)])
        line.append(UInt8(ascii: "="))
      default: break
      }
      if !line.isEmpty {
        indent(level)
        bytes.append(contentsOf: line)
        bytes.append(UInt8(ascii: "\n"))
      }
    }
  }

  static func real(_ number: Double) -> String {
    if number.isNaN { return "nan" }
    if number.isInfinite { return number < 0 ? "-infinity" : "+infinity" }
    if number == 0 { return "0.0" }
    return String(format: "%.17g", number)
  }

  static func date(_ date: Date) -> String {
    var seconds = time_t(exactly: date.timeIntervalSince1970.rounded(.down)) ?? 0
    var parts = tm()
    gmtime_r(&seconds, &parts)
    return String(
      format: "%04d-%02d-%02dT%02d:%02d:%02dZ", Int(parts.tm_year) + 1900, Int(parts.tm_mon) + 1,
      Int(parts.tm_mday), Int(parts.tm_hour), Int(parts.tm_min), Int(parts.tm_sec))
  }
}
