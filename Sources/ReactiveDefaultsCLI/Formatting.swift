import Foundation
@_spi(Tools) import ReactiveDefaults

/// How `rdefaults` prints values: plain for one scalar, a plist-style listing for collections and domains.
///
/// Nothing stored reaches the terminal raw: control characters (a newline in a key would forge a `watch` line, an
/// ESC could drive the terminal) are escaped the way old-style property lists quote strings.
enum Formatting {
  /// A single value as `read DOMAIN KEY` prints it: strings unquoted (control characters escaped), numbers
  /// plainly, Bool as 1 or 0, a URL as the URL.
  static func plain(_ value: PropertyListValue) -> String {
    if let url = url(in: value) { return escaped(url.absoluteString) }
    switch value {
    case .string(let text): return escaped(text)
    case .array, .dictionary: return listing(value)
    default: return scalar(value)
    }
  }

  /// A plist-style listing (the `defaults read` look), 4 spaces per level, keys sorted.
  static func listing(_ value: PropertyListValue, indent: Int = 0) -> String {
    let pad = String(repeating: " ", count: indent + 4)
    let closePad = String(repeating: " ", count: indent)
    if let url = url(in: value) { return quote(url.absoluteString) }
    switch value {
    case .array(let items):
      guard !items.isEmpty else { return "()" }
      let lines = items.map { pad + listing($0, indent: indent + 4) }
      return "(\n" + lines.joined(separator: ",\n") + "\n" + closePad + ")"
    case .dictionary(let entries):
      guard !entries.isEmpty else { return "{\n}" }
      let alike = lookAlikes(entries.keys)
      let lines = entries.keys.sorted().map { key in
        pad + keyName(key, alike: alike) + " = " + listing(entries[key]!, indent: indent + 4) + ";"
      }
      return "{\n" + lines.joined(separator: "\n") + "\n" + closePad + "}"
    case .string(let text):
      return quote(text)
    default:
      return scalar(value)
    }
  }

  /// A value on one line, as `watch` prints it: collections as old-style plists write them inline,
  /// `(a, b)` and `{k = v; }`.
  static func inline(_ value: PropertyListValue) -> String {
    if let url = url(in: value) { return quote(url.absoluteString) }
    switch value {
    case .array(let items): return "(" + items.map(inline).joined(separator: ", ") + ")"
    case .dictionary(let entries):
      let alike = lookAlikes(entries.keys)
      return "{" + entries.keys.sorted().map { "\(keyName($0, alike: alike)) = \(inline(entries[$0]!)); " }.joined()
        + "}"
    case .string(let text): return quote(text)
    default: return scalar(value)
    }
  }

  private static func scalar(_ value: PropertyListValue) -> String {
    switch value {
    case .bool(let flag): flag ? "1" : "0"
    case .integer(let number): "\(number)"
    case .real(let number): number == number.rounded() && abs(number) < 1e15 ? "\(Int64(number))" : "\(number)"
    case .string(let text): quote(text)
    case .data(let bytes): "<" + bytes.map { String(format: "%02x", $0) }.joined() + ">"
    case .date(let date): dateFormatter.string(from: date)
    case .array, .dictionary: listing(value)
    }
  }

  /// The URL a value holds, when it is a keyed archive of one (what `write -url` and Foundation's
  /// `set(_: URL?, forKey:)` store).
  static func url(in value: PropertyListValue) -> URL? {
    guard case .data(let bytes) = value, bytes.starts(with: Array("bplist00".utf8)) else { return nil }
    return URL(propertyListValue: value)
  }

  /// The type's name as `read-type` prints it (the names macOS `defaults read-type` uses, plus `url`).
  static func typeName(_ value: PropertyListValue) -> String {
    if url(in: value) != nil { return "url" }
    switch value {
    case .string: return "string"
    case .integer: return "integer"
    case .real: return "float"
    case .bool: return "boolean"
    case .date: return "date"
    case .data: return "data"
    case .array: return "array"
    case .dictionary: return "dictionary"
    }
  }

  /// Whether `word` appears, ignoring case, in a value (its text, number, URL, or anything inside it).
  static func contains(_ word: String, in value: PropertyListValue) -> Bool {
    switch value {
    case .array(let items): return items.contains { contains(word, in: $0) }
    case .dictionary(let entries):
      return entries.contains { $0.key.string.localizedCaseInsensitiveContains(word) || contains(word, in: $0.value) }
    case .string(let text): return text.localizedCaseInsensitiveContains(word)
    default: return plain(value).localizedCaseInsensitiveContains(word)
    }
  }

  /// A command-line word as a message names it: `argument 'x'`, or `empty argument` (never `''`).
  static func argument(_ word: String) -> String {
    word.isEmpty ? "empty argument" : "argument '\(escaped(word))'"
  }

  /// The keys that look alike: equal as Swift strings (which compare by canonical equivalence: `é` and `e` with a
  /// combining accent, `K` and the Kelvin sign), different as stored.
  private static func lookAlikes(_ keys: Dictionary<PropertyListKey, PropertyListValue>.Keys) -> Set<PropertyListKey> {
    var byText: [String: [PropertyListKey]] = [:]
    for key in keys { byText[key.string, default: []].append(key) }
    return Set(byText.values.filter { $0.count > 1 }.joined())
  }

  /// A key as a listing shows it; one that looks like another key of the same dictionary has every character
  /// outside ASCII escaped as `\Uxxxx`, so that `caf\U00e9` and `cafe\U0301` read as the two keys they are.
  private static func keyName(_ key: PropertyListKey, alike: Set<PropertyListKey>) -> String {
    guard alike.contains(key) else { return quote(key.string) }
    var text = ""
    for scalar in key.string.unicodeScalars {
      if scalar.isASCII {
        text += escaped(String(scalar), quoting: true)
      } else {
        text += String(format: "\\U%04x", scalar.value)
      }
    }
    return "\"" + text + "\""
  }

  private static let plainCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:")

  /// A string as a listing shows it: bare when it is made of plain characters, else quoted and escaped.
  private static func quote(_ text: String) -> String {
    if !text.isEmpty && text.allSatisfy({ plainCharacters.contains($0) }) { return text }
    return "\"" + escaped(text, quoting: true) + "\""
  }

  /// `text` with the characters a terminal could act on escaped as old-style property lists do (`\n`, `\t`, `\r`,
  /// `\a`, `\b`, `\f`, `\v`, else `\Uxxxx`); inside quotes, `"` and `\` too.
  static func escaped(_ text: String, quoting: Bool = false) -> String {
    var result = ""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"" where quoting: result += "\\\""
      case "\\" where quoting: result += "\\\\"
      case "\n": result += "\\n"
      case "\t": result += "\\t"
      case "\r": result += "\\r"
      case "\u{07}": result += "\\a"
      case "\u{08}": result += "\\b"
      case "\u{0C}": result += "\\f"
      case "\u{0B}": result += "\\v"
      default:
        if scalar.isUnsafeOnTerminals {
          result += "\\U" + String(format: "%04x", scalar.value)
        } else {
          result.unicodeScalars.append(scalar)
        }
      }
    }
    return result
  }

  /// A file name's bytes for the terminal, as a shell's `$'…'` spells them: bytes that are not UTF-8, and the
  /// characters a terminal could act on, as `\xHH`; `'` and `\` escaped.
  static func escaped(bytes: [UInt8]) -> String {
    var result = ""
    var index = 0
    while index < bytes.count {
      // The longest valid UTF-8 sequence starting here (1 to 4 bytes), else one raw byte.
      let valid = (1...min(4, bytes.count - index)).reversed().lazy.compactMap { length -> (String, Int)? in
        String(validating: bytes[index..<(index + length)], as: UTF8.self).map { ($0, length) }
      }.first { $0.0.unicodeScalars.count == 1 }
      if let (text, length) = valid, let scalar = text.unicodeScalars.first, !scalar.isUnsafeOnTerminals {
        result += text == "'" || text == "\\" ? "\\" + text : text
        index += length
      } else if let (_, length) = valid {
        for byte in bytes[index..<(index + length)] { result += String(format: "\\x%02x", byte) }
        index += length
      } else {
        result += String(format: "\\x%02x", bytes[index])
        index += 1
      }
    }
    return result
  }

  private static var dateFormatter: DateFormatter {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
    return formatter
  }

  /// A value as JSON (for `watch --json`): dates as ISO 8601 strings, data as base64 strings, URLs as strings.
  static func json(_ value: PropertyListValue?) -> Any {
    guard let value else { return NSNull() }
    if let url = url(in: value) { return url.absoluteString }
    switch value {
    case .bool(let flag): return flag
    case .integer(let number): return Int64(exactly: number).map { $0 as Any } ?? "\(number)"
    case .real(let number): return number.isFinite ? number as Any : "\(number)"
    case .string(let text): return text
    case .data(let bytes): return bytes.base64EncodedString()
    case .date(let date): return ISO8601DateFormatter().string(from: date)
    case .array(let items): return items.map { json($0) }
    case .dictionary(let entries):
      // JSON objects here are Swift dictionaries: of two keys that differ only by Unicode normalization, the first
      // in CoreFoundation's order is kept.
      var object: [String: Any] = [:]
      for key in entries.keys.sorted() where object[key.string] == nil { object[key.string] = json(entries[key]!) }
      return object
    }
  }

  /// One `watch --json` line.
  static func jsonLine(key: String, value: PropertyListValue?) -> String {
    let object: [String: Any] = ["key": key, "value": json(value)]
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    return String(decoding: data, as: UTF8.self)
  }
}
