import Foundation

/// A fast reader of the XML property lists CoreFoundation, this library and Python's `plistlib` write, for the
/// subset whose meaning is beyond doubt; for anything else it returns nil, and the caller asks CoreFoundation.
///
/// Reading 100,000 keys through CoreFoundation and converting its objects took half of an import; this reads the
/// bytes once. What it reads: an optional byte-order mark, the `<?xml …?>` declaration (UTF-8, or no encoding named),
/// an optional `<!DOCTYPE …>` without an internal subset, `<plist …>`, one value, `</plist>`, and white space between;
/// values as CoreFoundation writes them: `dict` (each key once), `array`, `key`, `string` (text with the five
/// predefined entities), `integer` (decimal, within 64 bits), `real` (decimal, `nan`, `+infinity`, `-infinity`),
/// `true`, `false`, `date` (`YYYY-MM-DDTHH:MM:SSZ`) and `data` (padded base64 and white space), and their empty
/// forms. What sends a file to CoreFoundation: comments, CDATA, character references, carriage returns and other
/// control characters in text, a key written twice, tags with attributes or spaces, nesting deeper than 64 levels,
/// invalid UTF-8, and every other form; CoreFoundation then decides, as it did before this reader existed.
enum XMLPropertyListReader {
  static func parse(_ data: Data) -> PropertyListValue? {
    data.withUnsafeBytes { raw -> PropertyListValue? in
      var reader = Reader(bytes: raw.bindMemory(to: UInt8.self))
      return reader.document()
    }
  }

  private struct Reader {
    let bytes: UnsafeBufferPointer<UInt8>
    var position = 0
    var depth = 0

    init(bytes: UnsafeBufferPointer<UInt8>) {
      self.bytes = bytes
    }

    mutating func document() -> PropertyListValue? {
      if skip([0xEF, 0xBB, 0xBF]) {}  // a byte-order mark
      skipSpace()
      guard skip("<?xml"), let declarationEnd = find("?>") else { return nil }
      let declaration = String(decoding: bytes[position..<declarationEnd], as: UTF8.self)
      guard Self.namesUTF8OrNoEncoding(declaration) else { return nil }
      position = declarationEnd + 2
      skipSpace()
      if skip("<!DOCTYPE") {
        guard let end = find(">"), !bytes[position..<end].contains(UInt8(ascii: "[")) else { return nil }
        position = end + 1
        skipSpace()
      }
      // `<plist` then white space or `>` (CoreFoundation refuses another tag that begins so).
      guard skip("<plist"), position < bytes.count, [0x20, 0x09, 0x0A, 0x0D, 0x3E].contains(bytes[position]),
        let end = find(">"), bytes[end - 1] != UInt8(ascii: "/")
      else { return nil }
      position = end + 1
      skipSpace()
      guard let root = value() else { return nil }
      skipSpace()
      guard skip("</plist>") else { return nil }
      skipSpace()
      return position == bytes.count ? root : nil
    }

    mutating func value() -> PropertyListValue? {
      guard position < bytes.count, bytes[position] == UInt8(ascii: "<"), depth < 64 else { return nil }
      if skip("<dict>") { return dictionary() }
      if skip("<array>") { return array() }
      if skip("<key>") { return nil }
      if skip("<string>") { return text(closing: "</string>").map(PropertyListValue.string) }
      if skip("<integer>") { return content(closing: "</integer>").flatMap(integer) }
      if skip("<real>") { return content(closing: "</real>").flatMap(real) }
      if skip("<true/>") { return .bool(true) }
      if skip("<false/>") { return .bool(false) }
      if skip("<date>") { return content(closing: "</date>").flatMap(date) }
      if skip("<data>") { return content(closing: "</data>").flatMap(data) }
      if skip("<dict/>") { return .dictionary([:]) }
      if skip("<array/>") { return .array([]) }
      if skip("<string/>") { return .string("") }
      return nil
    }

    mutating func dictionary() -> PropertyListValue? {
      depth += 1
      defer { depth -= 1 }
      var entries: [PropertyListKey: PropertyListValue] = [:]
      while true {
        skipSpace()
        if skip("</dict>") {
          // CoreFoundation reads a dictionary whose one key is `CF$UID`, with a number, as a keyed archive's
          // reference: left to it.
          if entries.count == 1, let only = entries["CF$UID"] {
            switch only {
            case .integer, .real: return nil
            default: break
            }
          }
          return .dictionary(entries)
        }
        guard skip("<key>"), let key = text(closing: "</key>") else { return nil }
        skipSpace()
        guard let value = value(), entries.updateValue(value, forKey: PropertyListKey(key)) == nil else { return nil }
      }
    }

    mutating func array() -> PropertyListValue? {
      depth += 1
      defer { depth -= 1 }
      var items: [PropertyListValue] = []
      while true {
        skipSpace()
        if skip("</array>") { return .array(items) }
        guard let item = value() else { return nil }
        items.append(item)
      }
    }

    /// The text up to `closing`, with the five predefined entities replaced; nil for anything else that needs XML's
    /// rules (markup, character references, control characters but tab and line feed) or is not UTF-8.
    mutating func text(closing: StaticString) -> String? {
      let start = position
      var hasEntity = false
      while position < bytes.count {
        let byte = bytes[position]
        if byte == UInt8(ascii: "<") { break }
        if byte == UInt8(ascii: "&") { hasEntity = true }
        if byte < 0x20 && byte != 0x09 && byte != 0x0A { return nil }
        position += 1
      }
      let end = position
      guard skip(closing) else { return nil }
      // CoreFoundation drops a byte-order mark that begins a text: left to it.
      guard !bytes[start..<end].starts(with: [0xEF, 0xBB, 0xBF]) else { return nil }
      guard hasEntity else { return String(validating: bytes[start..<end], as: UTF8.self) }
      var decoded: [UInt8] = []
      decoded.reserveCapacity(end - start)
      var index = start
      while index < end {
        guard bytes[index] == UInt8(ascii: "&") else {
          decoded.append(bytes[index])
          index += 1
          continue
        }
        guard let semicolon = bytes[index..<end].firstIndex(of: UInt8(ascii: ";")) else { return nil }
        switch String(decoding: bytes[(index + 1)..<semicolon], as: UTF8.self) {
        case "amp": decoded.append(UInt8(ascii: "&"))
        case "lt": decoded.append(UInt8(ascii: "<"))
        case "gt": decoded.append(UInt8(ascii: ">"))
        case "quot": decoded.append(UInt8(ascii: "\""))
        case "apos": decoded.append(UInt8(ascii: "'"))
        default: return nil
        }
        index = semicolon + 1
      }
      return String(validating: decoded, as: UTF8.self)
    }

    /// The ASCII content up to `closing` (numbers, dates, base64): no markup, no entity.
    mutating func content(closing: StaticString) -> String? {
      let start = position
      while position < bytes.count, bytes[position] != UInt8(ascii: "<") {
        guard bytes[position] < 0x80, bytes[position] != UInt8(ascii: "&") else { return nil }
        position += 1
      }
      let end = position
      guard skip(closing) else { return nil }
      return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// Whether the declaration (what lies between `<?xml` and `?>`) names no encoding, or UTF-8: the first
    /// `encoding`, `=`, and a quoted value that is `utf-8` in any case, as CoreFoundation reads it.
    static func namesUTF8OrNoEncoding(_ declaration: String) -> Bool {
      guard let name = declaration.range(of: "encoding") else { return true }
      var rest = declaration[name.upperBound...].drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
      guard rest.first == "=" else { return false }
      rest = rest.dropFirst().drop { $0 == " " || $0 == "\t" || $0 == "\n" || $0 == "\r" }
      guard let quote = rest.first, quote == "\"" || quote == "'" else { return false }
      let value = rest.dropFirst().prefix { $0 != quote }
      return value.lowercased() == "utf-8" && rest.dropFirst(value.count + 1).first == quote
    }

    func integer(_ text: String) -> PropertyListValue? {
      let digits = text.hasPrefix("-") ? text.dropFirst() : Substring(text)
      guard !digits.isEmpty, digits.utf8.allSatisfy({ (0x30...0x39).contains($0) }), let number = Int64(text) else {
        return nil
      }
      return .integer(Int128(number))
    }

    func real(_ text: String) -> PropertyListValue? {
      switch text {
      case "nan": return .real(.nan)
      case "+infinity": return .real(.infinity)
      case "-infinity": return .real(-.infinity)
      default:
        let allowed = text.utf8.allSatisfy {
          (0x30...0x39).contains($0) || $0 == UInt8(ascii: "-") || $0 == UInt8(ascii: "+") || $0 == UInt8(ascii: ".")
            || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E")
        }
        guard allowed, text.utf8.contains(where: { (0x30...0x39).contains($0) }), let number = Double(text),
          number.isFinite
        else { return nil }
        return .real(number)
      }
    }

    /// `YYYY-MM-DDTHH:MM:SSZ`, in UTC.
    func date(_ text: String) -> PropertyListValue? {
      let characters = Array(text.utf8)
      guard characters.count == 20, characters[4] == UInt8(ascii: "-"), characters[7] == UInt8(ascii: "-"),
        characters[10] == UInt8(ascii: "T"), characters[13] == UInt8(ascii: ":"),
        characters[16] == UInt8(ascii: ":"), characters[19] == UInt8(ascii: "Z")
      else { return nil }
      func number(_ range: Range<Int>) -> Int? {
        var value = 0
        for index in range {
          guard (0x30...0x39).contains(characters[index]) else { return nil }
          value = value * 10 + Int(characters[index] - 0x30)
        }
        return value
      }
      guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
        let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
        year >= 1, (1...12).contains(month), (1...Self.days(inMonth: month, of: year)).contains(day), hour < 24,
        minute < 60, second < 60
      else { return nil }
      let days = Self.daysSince1970(year: year, month: month, day: day)
      let seconds = Double(days * 86_400 + hour * 3_600 + minute * 60 + second)
      return .date(Date(timeIntervalSince1970: seconds))
    }

    static func days(inMonth month: Int, of year: Int) -> Int {
      switch month {
      case 2: return year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) ? 29 : 28
      case 4, 6, 9, 11: return 30
      default: return 31
      }
    }

    /// Days from 1970-01-01 to a date of the proleptic Gregorian calendar (Howard Hinnant's `days_from_civil`).
    static func daysSince1970(year: Int, month: Int, day: Int) -> Int {
      let year = month <= 2 ? year - 1 : year
      let era = (year >= 0 ? year : year - 399) / 400
      let yearOfEra = year - era * 400
      let dayOfYear = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1
      let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
      return era * 146_097 + dayOfEra - 719_468
    }

    func data(_ text: String) -> PropertyListValue? {
      let compact = text.utf8.filter { $0 != 0x20 && $0 != 0x09 && $0 != 0x0A }
      guard let data = Data(base64Encoded: Data(compact)) else { return nil }
      return .data(data)
    }

    mutating func skipSpace() {
      while position < bytes.count {
        switch bytes[position] {
        case 0x20, 0x09, 0x0A, 0x0D: position += 1
        default: return
        }
      }
    }

    /// Moves past `literal` when it comes next.
    mutating func skip(_ literal: StaticString) -> Bool {
      literal.withUTF8Buffer { skip($0) }
    }

    mutating func skip<Literal: Collection<UInt8>>(_ literal: Literal) -> Bool {
      guard bytes.count - position >= literal.count else { return false }
      var index = position
      for byte in literal {
        guard bytes[index] == byte else { return false }
        index += 1
      }
      position = index
      return true
    }

    /// Where `literal` next begins, from the current position.
    func find(_ literal: StaticString) -> Int? {
      literal.withUTF8Buffer { needle -> Int? in
        guard let first = needle.first, bytes.count >= needle.count else { return nil }
        var index = position
        while index <= bytes.count - needle.count {
          if bytes[index] == first && bytes[index..<(index + needle.count)].elementsEqual(needle) { return index }
          index += 1
        }
        return nil
      }
    }
  }
}
