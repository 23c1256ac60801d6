import Foundation

/// A `Codable` type stored as JSON text, opted in by declaring the conformance.
///
/// ```swift
/// struct Layout: DefaultsCodable { var columns = 2 }
/// extension DefaultsKeys { static let layout = DefaultsKey<Layout>("layout", default: .init()) }
/// ```
///
/// The JSON is written with sorted keys, so equal values have equal stored text and a write of an
/// equal value notifies nobody. Stored data that holds UTF-8 JSON is read as well.
public protocol DefaultsCodable: DefaultsValue, Codable {}

extension DefaultsCodable {
  /// Stored as `<string>` holding the value's JSON.
  ///
  /// - Throws: The `EncodingError` of `JSONEncoder` (for example for a non-finite `Double`).
  public func propertyListValue() throws -> PropertyListValue? {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    let data = try encoder.encode(self)
    return .string(String(decoding: data, as: UTF8.self))
  }

  /// Reads JSON text (or UTF-8 JSON data) that decodes as this type.
  public init?(propertyListValue: PropertyListValue) {
    let data: Data
    switch propertyListValue {
    case .string(let text): data = Data(text.utf8)
    case .data(let bytes): data = bytes
    default: return nil
    }
    guard let value = try? JSONDecoder().decode(Self.self, from: data) else { return nil }
    self = value
  }
}
