extension Unicode.Scalar {
  /// Whether a terminal could act on the character instead of showing it: the C0 and C1 controls and DEL, the line
  /// and paragraph separators, and the bidirectional-text controls (which reorder what follows them).
  @_spi(Tools) public var isUnsafeOnTerminals: Bool {
    switch value {
    case 0x00...0x1F, 0x7F...0x9F, 0x2028, 0x2029, 0x200E, 0x200F, 0x202A...0x202E, 0x2066...0x2069, 0x061C: true
    default: false
    }
  }
}
