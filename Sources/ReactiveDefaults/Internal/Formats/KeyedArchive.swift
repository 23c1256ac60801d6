import Foundation

/// Reads the URL out of a keyed archive of an `NSURL` without `NSKeyedUnarchiver` where that is unsafe.
///
/// corelibs' `NSKeyedUnarchiver.unarchivedObject(ofClass:from:)` stops the process (`fatalError`) when the archive
/// holds another class, such as a dictionary, instead of throwing; settings read from disk may hold anything.
/// So on Linux the archive is walked as the property list it is: `$top.root` names an object whose `$class` is
/// `NSURL`, with a string `NS.relative` and an optional `NS.base` (another such object). Binary archives are
/// read by ``BinaryPropertyList``, never by corelibs' binary parser.
enum KeyedArchive {
  /// The URL as archived, not resolved: a file URL Apple stored with its home folder abbreviated is `~/…` relative
  /// to the working directory, and resolving it before the `~` is expanded would give `<working directory>/~/…`.
  static func url(from archive: Data) -> URL? {
    #if canImport(Darwin)
      guard archive.starts(with: Array("bplist00".utf8)) || archive.starts(with: Array("<?xml".utf8)) else {
        return nil
      }
      return (try? NSKeyedUnarchiver.unarchivedObject(ofClass: NSURL.self, from: archive)).map { $0 as URL }
    #else
      let parsed: ArchiveNode?
      if archive.starts(with: Array("bplist00".utf8)) {
        parsed = BinaryPropertyList.parse(archive)
      } else if archive.starts(with: Array("<?xml".utf8)) {
        parsed = (try? PropertyListSerialization.propertyList(from: archive, format: nil)).flatMap(node)
      } else {
        parsed = nil
      }
      guard case .dictionary(let root)? = parsed, root["$archiver"] == .string("NSKeyedArchiver"),
        case .array(let objects)? = root["$objects"], case .dictionary(let top)? = root["$top"],
        case .reference(let index)? = top["root"]
      else { return nil }
      return url(at: index, in: objects, depth: 0)
    #endif
  }

  private static func url(at index: Int, in objects: [ArchiveNode], depth: Int) -> URL? {
    guard depth < 8, objects.indices.contains(index), case .dictionary(let object) = objects[index],
      case .reference(let classIndex)? = object["$class"], objects.indices.contains(classIndex),
      case .dictionary(let classInfo) = objects[classIndex], classInfo["$classname"] == .string("NSURL"),
      case .reference(let relativeIndex)? = object["NS.relative"], objects.indices.contains(relativeIndex),
      case .string(let relative) = objects[relativeIndex]
    else { return nil }
    var base: URL?
    if case .reference(let baseIndex)? = object["NS.base"], baseIndex != 0 {
      guard let resolved = url(at: baseIndex, in: objects, depth: depth + 1) else { return nil }
      base = resolved
    }
    return URL(string: relative, relativeTo: base)
  }

  /// Converts what corelibs' XML parser returns. A `CF$UID` reference comes back as a private
  /// `_NSKeyedArchiverUID` object (read through reflection) or, from other writers, as `{"CF$UID": n}`.
  private static func node(_ value: Any) -> ArchiveNode? {
    guard let value = unwrapOptional(value) else { return .null }
    switch value {
    case let text as String: return .string(text)
    case let entries as [AnyHashable: Any]:
      var result: [PropertyListKey: ArchiveNode] = [:]
      for (key, element) in entries {
        guard let name = key.base as? String, let child = node(element) else { return nil }
        result[PropertyListKey(name)] = child
      }
      if result.count == 1, case .integer(let index)? = result["CF$UID"] { return .reference(Int(index)) }
      return .dictionary(result)
    case let items as [Any]:
      var result: [ArchiveNode] = []
      for item in items {
        guard let child = node(item) else { return nil }
        result.append(child)
      }
      return .array(result)
    default:
      if String(describing: type(of: value)).hasSuffix("KeyedArchiverUID") {
        for child in Mirror(reflecting: value).children where child.label == "value" {
          if let index = child.value as? UInt32 { return .reference(Int(index)) }
        }
        return nil
      }
      switch PropertyListValue(foundationObject: value) {
      case .integer(let number)?: return .integer(number)
      case .real(let number)?: return .real(number)
      case .bool(let flag)?: return .bool(flag)
      case .data(let bytes)?: return .data(bytes)
      case .date(let date)?: return .date(date.timeIntervalSinceReferenceDate)
      default: return nil
      }
    }
  }
}
