import Foundation

/// A property-list object as the keyed-archive reader needs it: the plist types plus archive references.
indirect enum ArchiveNode: Equatable {
  case null
  case bool(Bool)
  case integer(Int128)
  case real(Double)
  /// A `<date>`: seconds since 2001-01-01 (only suite files hold them; an archive's dates are reals).
  case date(Double)
  case string(String)
  case data(Data)
  case reference(Int)
  case array([ArchiveNode])
  case dictionary([PropertyListKey: ArchiveNode])
}

/// A strict reader of binary property lists (`bplist00`), for data that may be anything.
///
/// corelibs' `PropertyListSerialization` crashes (SIGSEGV while bridging) on some malformed binary plists, for
/// example one holding a set; it was found by the fuzzer. This reader accepts the types keyed archives and
/// suite files use, checks every offset, length, reference and nesting depth, and answers nil for anything else.
///
/// Two limits keep hostile files cheap: nesting deeper than ``maximumDepth`` (corelibs itself refuses 512 levels
/// and reads 510, measured with Python-written files), and more than ``nodeBudget(forByteCount:)`` objects
/// visited. A binary plist may reference one object from many places, so 300 bytes whose arrays each name one
/// child twice, 22 levels deep, stand for 4 million objects: corelibs expands them all (every process that
/// opens such a suite hangs); this reader gives up after its budget, in milliseconds.
struct BinaryPropertyList {
  private let bytes: [UInt8]
  private let offsets: [Int]
  private let referenceSize: Int

  /// The deepest nesting read, counting the root as level 1: the most corelibs reads.
  static let maximumDepth = 511

  /// How many objects a file of `count` bytes may expand to: far more than any real file (whose shared objects
  /// are mostly strings and numbers), far fewer than a reference bomb.
  static func nodeBudget(forByteCount count: Int) -> Int {
    100_000 + 16 * count
  }

  static func parse(_ data: Data) -> ArchiveNode? {
    guard let reader = BinaryPropertyList(data) else { return nil }
    var path = Set<Int>()
    var budget = nodeBudget(forByteCount: data.count)
    return reader.node(at: reader.top, depth: 0, path: &path, budget: &budget)
  }

  private let top: Int

  private init?(_ data: Data) {
    let bytes = [UInt8](data)
    guard bytes.count >= 8 + 32, bytes.starts(with: Array("bplist00".utf8)) else { return nil }
    let trailer = bytes.count - 32
    let offsetSize = Int(bytes[trailer + 6])
    let referenceSize = Int(bytes[trailer + 7])
    guard (1...8).contains(offsetSize), (1...8).contains(referenceSize),
      let count = Self.unsigned(bytes, at: trailer + 8, size: 8),
      let top = Self.unsigned(bytes, at: trailer + 16, size: 8),
      let tableStart = Self.unsigned(bytes, at: trailer + 24, size: 8),
      count > 0, count <= bytes.count, top < count, tableStart >= 8,
      tableStart + count * offsetSize <= trailer
    else { return nil }
    var offsets: [Int] = []
    offsets.reserveCapacity(count)
    for index in 0..<count {
      guard let offset = Self.unsigned(bytes, at: tableStart + index * offsetSize, size: offsetSize),
        offset >= 8, offset < tableStart
      else { return nil }
      offsets.append(offset)
    }
    self.bytes = bytes
    self.offsets = offsets
    self.referenceSize = referenceSize
    self.top = top
  }

  private static func unsigned(_ bytes: [UInt8], at start: Int, size: Int) -> Int? {
    guard start >= 0, size <= 8, start + size <= bytes.count else { return nil }
    var value: UInt64 = 0
    for byte in bytes[start..<(start + size)] { value = value << 8 | UInt64(byte) }
    return value <= UInt64(Int.max) ? Int(value) : nil
  }

  /// The length that follows a marker whose low nibble is 0xF: an integer object.
  private func length(marker: UInt8, at position: Int) -> (length: Int, start: Int)? {
    let nibble = Int(marker & 0x0F)
    guard nibble == 0x0F else { return (nibble, position + 1) }
    guard position + 1 < bytes.count, bytes[position + 1] & 0xF0 == 0x10 else { return nil }
    let size = 1 << Int(bytes[position + 1] & 0x0F)
    guard size <= 8, let value = Self.unsigned(bytes, at: position + 2, size: size) else { return nil }
    return (value, position + 2 + size)
  }

  private func node(at index: Int, depth: Int, path: inout Set<Int>, budget: inout Int) -> ArchiveNode? {
    // Deep, cyclic or exploding object graphs end here rather than in a stack overflow or a hang.
    budget -= 1
    guard budget >= 0, depth < Self.maximumDepth, offsets.indices.contains(index), !path.contains(index) else {
      return nil
    }
    let position = offsets[index]
    let marker = bytes[position]
    switch marker >> 4 {
    case 0x0:
      switch marker {
      case 0x00: return .null
      case 0x08: return .bool(false)
      case 0x09: return .bool(true)
      default: return nil
      }
    case 0x1:
      let size = 1 << Int(marker & 0x0F)
      if size == 16 {
        // CoreFoundation writes integers above Int64.max as 16 bytes.
        guard let high = Self.unsignedBits(bytes, at: position + 1, size: 8),
          let low = Self.unsignedBits(bytes, at: position + 9, size: 8)
        else { return nil }
        return .integer(Int128(Int64(bitPattern: high)) << 64 | Int128(low))
      }
      guard size <= 8, let raw = Self.unsignedBits(bytes, at: position + 1, size: size) else { return nil }
      return .integer(size == 8 ? Int128(Int64(bitPattern: raw)) : Int128(raw))
    case 0x2:
      switch marker & 0x0F {
      case 2:
        guard let raw = Self.unsignedBits(bytes, at: position + 1, size: 4) else { return nil }
        return .real(Double(Float(bitPattern: UInt32(raw))))
      case 3:
        guard let raw = Self.unsignedBits(bytes, at: position + 1, size: 8) else { return nil }
        return .real(Double(bitPattern: raw))
      default: return nil
      }
    case 0x3:
      guard marker == 0x33, let raw = Self.unsignedBits(bytes, at: position + 1, size: 8) else { return nil }
      return .date(Double(bitPattern: raw))
    case 0x4:
      guard let (count, start) = length(marker: marker, at: position), start + count <= bytes.count else { return nil }
      return .data(Data(bytes[start..<(start + count)]))
    case 0x5:
      guard let (count, start) = length(marker: marker, at: position), start + count <= bytes.count,
        let text = String(bytes: bytes[start..<(start + count)], encoding: .ascii)
      else { return nil }
      return .string(text)
    case 0x6:
      guard let (count, start) = length(marker: marker, at: position), count <= bytes.count,
        start + count * 2 <= bytes.count
      else { return nil }
      let units = (0..<count).map { UInt16(bytes[start + 2 * $0]) << 8 | UInt16(bytes[start + 2 * $0 + 1]) }
      return .string(String(decoding: units, as: UTF16.self))
    case 0x8:
      guard let value = Self.unsigned(bytes, at: position + 1, size: Int(marker & 0x0F) + 1) else { return nil }
      return .reference(value)
    case 0xA, 0xD:
      guard let (count, start) = length(marker: marker, at: position) else { return nil }
      let references = marker >> 4 == 0xA ? count : count * 2
      guard references <= bytes.count, start + references * referenceSize <= bytes.count else { return nil }
      var children: [ArchiveNode] = []
      path.insert(index)
      defer { path.remove(index) }
      for slot in 0..<references {
        guard let child = Self.unsigned(bytes, at: start + slot * referenceSize, size: referenceSize),
          let value = node(at: child, depth: depth + 1, path: &path, budget: &budget)
        else { return nil }
        children.append(value)
      }
      guard marker >> 4 == 0xD else { return .array(children) }
      var entries: [PropertyListKey: ArchiveNode] = [:]
      for slot in 0..<count {
        guard case .string(let key) = children[slot] else { return nil }
        entries[PropertyListKey(key)] = children[count + slot]
      }
      return .dictionary(entries)
    default:
      return nil  // sets and reserved markers
    }
  }

  private static func unsignedBits(_ bytes: [UInt8], at start: Int, size: Int) -> UInt64? {
    guard start >= 0, size <= 8, start + size <= bytes.count else { return nil }
    var value: UInt64 = 0
    for byte in bytes[start..<(start + size)] { value = value << 8 | UInt64(byte) }
    return value
  }
}
