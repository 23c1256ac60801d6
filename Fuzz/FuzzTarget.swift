// libFuzzer harness: arbitrary bytes, as a property list when they parse and as raw data and text otherwise, fed to
// the decoder of every value type. Built by Fuzz/run together with the library's sources (one module, so the
// harness sees internal types too).
import Foundation

enum FuzzTheme: String, DefaultsValue { case light, dark }

struct FuzzLayout: DefaultsCodable, Equatable {
  var columns: Int
  var title: String?
  var nested: [String: [Double]]?
}

private func decodeWithEveryType(_ value: PropertyListValue) {
  _ = Bool(propertyListValue: value)
  _ = Int(propertyListValue: value)
  _ = Int8(propertyListValue: value)
  _ = Int16(propertyListValue: value)
  _ = Int32(propertyListValue: value)
  _ = Int64(propertyListValue: value)
  _ = UInt(propertyListValue: value)
  _ = UInt8(propertyListValue: value)
  _ = UInt16(propertyListValue: value)
  _ = UInt32(propertyListValue: value)
  _ = UInt64(propertyListValue: value)
  _ = Double(propertyListValue: value)
  _ = Float(propertyListValue: value)
  _ = String(propertyListValue: value)
  _ = Data(propertyListValue: value)
  _ = Date(propertyListValue: value)
  _ = UUID(propertyListValue: value)
  _ = FuzzTheme(propertyListValue: value)
  _ = FuzzLayout(propertyListValue: value)
  _ = [Int](propertyListValue: value)
  _ = [String: String](propertyListValue: value)
  _ = [URL](propertyListValue: value)
  _ = Int?(propertyListValue: value)
  if let url = URL(propertyListValue: value) {
    // A decoded URL must encode again without trouble.
    _ = try? url.propertyListValue()
  }
  // What the store hands to UserDefaults must convert back to the same value.
  let object = value.foundationObject
  if let back = PropertyListValue(foundationObject: object), back != value, !containsNaN(value) {
    fatalError("foundationObject round trip changed \(value) into \(back)")
  }
}

private func containsNaN(_ value: PropertyListValue) -> Bool {
  switch value {
  case .real(let number): number.isNaN
  case .array(let items): items.contains(where: containsNaN)
  case .dictionary(let entries): entries.values.contains(where: containsNaN)
  default: false
  }
}

/// libFuzzer calls this with each input.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ start: UnsafeRawPointer, _ count: Int) -> CInt {
  let bytes = Data(bytes: start, count: count)
  var values: [PropertyListValue] = [.data(bytes), .string(String(decoding: bytes, as: UTF8.self))]
  _ = BinaryPropertyList.parse(bytes)
  // Suite files and imports: the strict reader with its depth and node budget, and the size limit.
  _ = try? SuiteFile.parseDomain(bytes)
  // corelibs' binary parser crashes on some malformed input (see BinaryPropertyListTests): the library never
  // hands it untrusted bytes, so neither does the harness.
  if !bytes.starts(with: Array("bplist".utf8)),
    let parsed = try? PropertyListSerialization.propertyList(from: bytes, format: nil),
    let value = PropertyListValue(foundationObject: parsed)
  {
    values.append(value)
    switch value {
    case .array(let items): values += items
    case .dictionary(let entries): values += entries.values
    default: break
    }
  }
  for value in values { decodeWithEveryType(value) }
  return 0
}
