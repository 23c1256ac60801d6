import Foundation
import ReactiveDefaults

/// How `rdefaults` prints values: plain for one scalar, a plist-style listing for collections and domains.
enum Formatting {
  /// A single value as `read DOMAIN KEY` prints it: strings unquoted, numbers plainly, Bool as 1 or 0.
  static func plain(_ value: PropertyListValue) -> String {
    switch value {
    case .string(let text): text
    case .array, .dictionary: listing(value)
    default: scalar(value, quoted: false)
    }
  }

  /// A plist-style listing (the `defaults read` look), 4 spaces per level, keys sorted.
  static func listing(_ value: PropertyListValue, indent: Int = 0) -> String {
    let pad = String(repeating: " ", count: indent + 4)
    let closePad = String(repeating: " ", count: indent)
    switch value {
    case .array(let items):
      guard !items.isEmpty else { return "()" }
      let lines = items.map { pad + listing($0, indent: indent + 4) }
      return "(\n" + lines.joined(separator: ",\n") + "\n" + closePad + ")"
    case .dictionary(let entries):
      guard !entries.isEmpty else { return "{\n}" }
      let lines = entries.keys.sorted().map { key in
        pad + quote(key) + " = " + listing(entries[key]!, indent: indent + 4) + ";"
      }
      return "{\n" + lines.joined(separator: "\n") + "\n" + closePad + "}"
    default:
      return scalar(value, quoted: true)
    }
  }

  private static func scalar(_ value: PropertyListValue, quoted: Bool) -> String {
    switch value {
    case .bool(let flag): flag ? "1" : "0"
    case .integer(let number): "\(number)"
    case .real(let number): number == number.rounded() && abs(number) < 1e15 ? "\(Int64(number))" : "\(number)"
    case .string(let text): quoted ? quote(text) : text
    case .data(let bytes): "<" + bytes.map { String(format: "%02x", $0) }.joined() + ">"
    case .date(let date): dateFormatter.string(from: date)
    case .array, .dictionary: listing(value)
    }
  }

  private static let plainCharacters = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:")

  private static func quote(_ text: String) -> String {
    if !text.isEmpty && text.allSatisfy({ plainCharacters.contains($0) }) { return text }
    var escaped = "\""
    for character in text {
      switch character {
      case "\"": escaped += "\\\""
      case "\\": escaped += "\\\\"
      case "\n": escaped += "\\n"
      case "\t": escaped += "\\t"
      default: escaped.append(character)
      }
    }
    return escaped + "\""
  }

  private static var dateFormatter: DateFormatter {
    let formatter = DateFormatter()
    formatter.locale = Locale(identifier: "en_US_POSIX")
    formatter.timeZone = TimeZone(identifier: "UTC")
    formatter.dateFormat = "yyyy-MM-dd HH:mm:ss Z"
    return formatter
  }

  /// A value as JSON (for `watch --json`): dates as ISO 8601 strings, data as base64 strings.
  static func json(_ value: PropertyListValue?) -> Any {
    guard let value else { return NSNull() }
    switch value {
    case .bool(let flag): return flag
    case .integer(let number): return Int64(exactly: number).map { $0 as Any } ?? "\(number)"
    case .real(let number): return number.isFinite ? number as Any : "\(number)"
    case .string(let text): return text
    case .data(let bytes): return bytes.base64EncodedString()
    case .date(let date): return ISO8601DateFormatter().string(from: date)
    case .array(let items): return items.map { json($0) }
    case .dictionary(let entries): return entries.mapValues { json($0) }
    }
  }

  /// One `watch --json` line.
  static func jsonLine(key: String, value: PropertyListValue?) -> String {
    let object: [String: Any] = ["key": key, "value": json(value)]
    let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data("{}".utf8)
    return String(decoding: data, as: UTF8.self)
  }
}
