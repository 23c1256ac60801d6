import Foundation

/// A key of a property-list dictionary, compared as CoreFoundation compares keys: by its exact Unicode scalars.
///
/// Swift's `String` compares by canonical equivalence, so `"café"` with a precomposed `é` (U+00E9) equals `"café"`
/// with `e` and a combining acute accent (U+0065 U+0301), and `"K"` equals the Kelvin sign (U+212A). To
/// CoreFoundation (`CFEqual` compares UTF-16 code units), to Apple's property-list format and to every other tool,
/// those are different keys. A `[String: …]` dictionary would merge them and lose one's value; the library keys
/// every dictionary of stored data by this type instead, so two keys that differ only by normalization are two
/// keys everywhere: in files, edits, imports, exports, observers and registries.
///
/// A string literal makes one (`.dictionary(["columns": .integer(2)])`), and so does ``init(_:)``; the text is
/// kept exactly as given, never normalized.
public struct PropertyListKey: Sendable, Hashable, Comparable, ExpressibleByStringLiteral, CustomStringConvertible,
  CustomDebugStringConvertible
{
  /// The key's text, exactly as given.
  public let string: String

  /// A key with exactly these characters.
  public init(_ string: String) {
    self.string = string
  }

  /// A key with exactly the literal's characters.
  public init(stringLiteral value: String) {
    string = value
  }

  /// Equal when the Unicode scalars are: UTF-8 bytes are equal exactly when the scalars are.
  public static func == (lhs: Self, rhs: Self) -> Bool {
    // Both texts' bytes in memory (native and small strings, the usual case): one comparison of the bytes.
    let compared: Bool?? = lhs.string.utf8.withContiguousStorageIfAvailable { left in
      rhs.string.utf8.withContiguousStorageIfAvailable { right in
        guard left.count == right.count, let first = left.baseAddress, let second = right.baseAddress else {
          return left.count == right.count
        }
        return first == second || memcmp(first, second, left.count) == 0
      }
    }
    if let compared = compared ?? nil { return compared }
    return lhs.string.utf8.elementsEqual(rhs.string.utf8)
  }

  /// Hashes the UTF-8 bytes, which `==` compares.
  public func hash(into hasher: inout Hasher) {
    let hashed: Void? = string.utf8.withContiguousStorageIfAvailable {
      hasher.combine(bytes: UnsafeRawBufferPointer($0))
    }
    if hashed == nil {
      for byte in string.utf8 { hasher.combine(byte) }
    }
    hasher.combine(0xFF as UInt8)  // never a UTF-8 byte: ends the key
  }

  /// CoreFoundation's order, in which it writes a dictionary's keys: by UTF-16 code units.
  public static func < (lhs: Self, rhs: Self) -> Bool {
    XMLPropertyList.precedesInUTF16Order(lhs.string, rhs.string)
  }

  /// The key's text, exactly as given.
  public var description: String { string }

  /// The key quoted, with every scalar outside printable ASCII escaped (`"cafe\u{301}"`): two keys that look
  /// alike read differently.
  public var debugDescription: String {
    var text = "\""
    for scalar in string.unicodeScalars {
      if scalar.isASCII, scalar.value >= 0x20, scalar.value < 0x7F, scalar != "\"", scalar != "\\" {
        text.unicodeScalars.append(scalar)
      } else {
        text += "\\u{\(String(scalar.value, radix: 16, uppercase: true))}"
      }
    }
    return text + "\""
  }
}
