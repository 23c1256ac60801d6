// The `write` command's TYPE VALUE… parser.
import Foundation
import ReactiveDefaults

extension Commands {
  /// Whether a number's text spells zero (its digits before the exponent all 0), rather than a number too small for
  /// a double: `0`, `-0.0`, `0e5`, `0x0p3`.
  static func spellsZero(_ text: String) -> Bool {
    var digits = Substring(text)
    if digits.first == "-" || digits.first == "+" { digits = digits.dropFirst() }
    let hex = digits.lowercased().hasPrefix("0x")
    if hex { digits = digits.dropFirst(2) }
    let mantissa = digits.prefix { hex ? $0 != "p" && $0 != "P" : $0 != "e" && $0 != "E" }
    return mantissa.allSatisfy { $0 == "0" || $0 == "." }
  }

  static func parseValue(type: String?, _ values: [String]) throws -> PropertyListValue {
    guard let type else {
      guard let value = values.first else { throw RDefaults.usage("a value is missing.", command: "write") }
      guard values.count == 1 else {
        throw RDefaults.usage(
          "several values ('\(Formatting.escaped(values[1]))' is the second) need -array or -dict.", command: "write")
      }
      return .string(value)
    }
    func single() throws -> String {
      guard values.count == 1 else {
        throw RDefaults.usage(
          values.count > 1
            ? "\(type) takes one value; '\(Formatting.escaped(values[1]))' is a second."
            : "\(type) needs a value.", command: "write")
      }
      return values[0]
    }
    func invalid(_ what: String) -> Failure {
      RDefaults.usage("'\(Formatting.escaped(values.first ?? ""))' is not \(what).", command: "write")
    }
    switch type {
    case "-string": return .string(try single())
    case "-int", "-integer":
      guard let number = Int64(try single()) else { throw invalid("an integer") }
      return .integer(Int128(number))
    case "-float", "-double", "-real":
      let text = try single()
      guard let number = Double(text) else { throw invalid("a number") }
      // `Double("1e400")` is infinity, and `Double("1e-400")` zero: stored, either would silently be another number
      // than the one asked for.
      guard number.isFinite, number != 0 || Self.spellsZero(text) else {
        throw invalid("a finite number a double holds (at most about ±1.8e308; not so small it would be 0)")
      }
      return .real(number)
    case "-bool", "-boolean":
      guard let flag = Bool(propertyListValue: .string(try single())) ?? ["1": true, "0": false][values[0]] else {
        throw invalid("YES, NO, true, false, 1 or 0")
      }
      return .bool(flag)
    case "-date":
      let text = try single()
      guard let date = ISO8601DateFormatter().date(from: text) else { throw invalid("an ISO 8601 date") }
      return .date(date)
    case "-data":
      let hex = try single()
      guard hex.count.isMultiple(of: 2), let bytes = hexBytes(hex) else { throw invalid("hex digits") }
      return .data(Data(bytes))
    case "-url":
      let text = try single()
      let url = text.hasPrefix("/") ? URL(fileURLWithPath: text) : URL(string: text)
      guard let url, url.scheme != nil, let archive = try? url.propertyListValue() else {
        throw invalid("an absolute URL or path")
      }
      return archive
    case "-array":
      return .array(values.map { .string($0) })
    case "-dict":
      guard values.count.isMultiple(of: 2) else {
        throw RDefaults.usage(
          "-dict takes pairs of KEY VALUE; '\(Formatting.escaped(values.last ?? ""))' has no value.", command: "write")
      }
      var entries: [PropertyListKey: PropertyListValue] = [:]
      for index in stride(from: 0, to: values.count, by: 2) {
        // A key given twice would keep its last value silently.
        guard entries.updateValue(.string(values[index + 1]), forKey: PropertyListKey(values[index])) == nil else {
          throw RDefaults.usage(
            "-dict names the key '\(Formatting.escaped(values[index]))' twice.", command: "write")
        }
      }
      return .dictionary(entries)
    default:
      throw RDefaults.usage("unknown type '\(type)'.", command: "write")
    }
  }

  private static func hexBytes(_ hex: String) -> [UInt8]? {
    var bytes: [UInt8] = []
    var index = hex.startIndex
    while index < hex.endIndex {
      let next = hex.index(index, offsetBy: 2)
      guard let byte = UInt8(hex[index..<next], radix: 16) else { return nil }
      bytes.append(byte)
      index = next
    }
    return bytes
  }
}
