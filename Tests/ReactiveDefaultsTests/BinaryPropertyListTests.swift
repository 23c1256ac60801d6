import Foundation
import Testing

@testable import ReactiveDefaults

@Suite struct BinaryPropertyListTests {
  /// The reader agrees with corelibs on the binary plists corelibs writes.
  @Test func readsWhatCorelibsWrites() throws {
    let domain: [String: Any] = [
      "bool": true, "int": -42, "big": Int64.max, "huge": UInt64.max, "real": 0.25, "text": "héllo ✓", "ascii": "plain",
      "data": Data([0, 1, 2]), "list": [1, "two", [3.5]], "nested": ["a": ["b": false]], "empty": [String: Any](),
    ]
    let data = try PropertyListSerialization.data(fromPropertyList: domain, format: .binary, options: 0)
    guard case .dictionary(let entries)? = BinaryPropertyList.parse(data) else {
      Issue.record("not read")
      return
    }
    #expect(entries["bool"] == .bool(true))
    #expect(entries["int"] == .integer(-42))
    #expect(entries["big"] == .integer(Int128(Int64.max)))
    #expect(entries["huge"] == .integer(Int128(UInt64.max)))
    #expect(entries["real"] == .real(0.25))
    #expect(entries["text"] == .string("héllo ✓"))
    #expect(entries["ascii"] == .string("plain"))
    #expect(entries["data"] == .data(Data([0, 1, 2])))
    #expect(entries["list"] == .array([.integer(1), .string("two"), .array([.real(3.5)])]))
    #expect(entries["nested"] == .dictionary(["a": .dictionary(["b": .bool(false)])]))
    #expect(entries["empty"] == .dictionary([:]))
  }

  /// Found by the fuzzer: corelibs' own parser crashes on this input (a set inside a mangled dictionary), and
  /// a URL key holding it must read as a type mismatch instead.
  @Test func theFuzzerCrashInputIsRejected() throws {
    let input = try #require(Data(base64Encoded: fuzzerFindingBinaryPlist))
    #expect(BinaryPropertyList.parse(input) == nil)
    #expect(URL(propertyListValue: .data(input)) == nil)
  }

  @Test func rejectsTruncatedCyclicAndOutOfRangeInput() throws {
    let valid = try PropertyListSerialization.data(fromPropertyList: ["k": [1, 2]], format: .binary, options: 0)
    for length in [0, 8, 20, valid.count - 1] {
      #expect(BinaryPropertyList.parse(valid.prefix(length)) == nil, "prefix \(length)")
    }
    // An array whose only element is itself: object 0 = 0xA1 (array of 1) referencing object 0.
    var cyclic = Array("bplist00".utf8) + [0xA1, 0x00]
    let table = cyclic.count
    cyclic += [0x08]  // offset of object 0
    cyclic += [UInt8](repeating: 0, count: 6) + [1, 1]  // offset size, reference size
    cyclic += withUnsafeBytes(of: UInt64(1).bigEndian, Array.init)  // object count
    cyclic += withUnsafeBytes(of: UInt64(0).bigEndian, Array.init)  // top object
    cyclic += withUnsafeBytes(of: UInt64(table).bigEndian, Array.init)  // offset table
    #expect(BinaryPropertyList.parse(Data(cyclic)) == nil)
    // The same with a top object index past the end.
    cyclic[cyclic.count - 9] = 5
    #expect(BinaryPropertyList.parse(Data(cyclic)) == nil)
  }
}
