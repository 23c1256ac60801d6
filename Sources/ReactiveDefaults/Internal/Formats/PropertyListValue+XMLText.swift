extension PropertyListValue {
  /// The first text in the value (a string, or a dictionary's key, at any depth) that XML 1.0 cannot carry: a control
  /// character other than tab, line feed and carriage return (U+0000–U+0008, U+000B, U+000C, U+000E–U+001F), or
  /// U+FFFE / U+FFFF.
  var textXMLCannotCarry: String? {
    switch self {
    case .string(let text): text.canBeCarriedByXML ? nil : text
    case .array(let items):
      items.lazy.compactMap(\.textXMLCannotCarry).first
    case .dictionary(let entries):
      entries.lazy.compactMap { key, value in key.string.canBeCarriedByXML ? value.textXMLCannotCarry : key.string }
        .first
    case .bool, .integer, .real, .date, .data: nil
    }
  }
}

extension String {
  /// Whether XML 1.0 can carry the text (every character is a `Char` of the XML 1.0 grammar).
  var canBeCarriedByXML: Bool {
    unicodeScalars.allSatisfy { scalar in
      switch scalar.value {
      case 0x09, 0x0A, 0x0D: true
      case 0x00...0x1F, 0xFFFE, 0xFFFF: false
      default: true
      }
    }
  }
}
