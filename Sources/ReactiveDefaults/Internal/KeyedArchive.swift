import Foundation

/// Reads the URL out of a keyed archive of an `NSURL` without `NSKeyedUnarchiver` where that is unsafe.
///
/// corelibs' `NSKeyedUnarchiver.unarchivedObject(ofClass:from:)` stops the process (`fatalError`) when the archive
/// holds another class, such as a dictionary, instead of throwing; settings read from disk may hold anything.
/// So on Linux the archive is walked as the property list it is: `$top.root` names an object whose `$class` is
/// `NSURL`, with a string `NS.relative` and an optional `NS.base` (another such object).
enum KeyedArchive {
  static func url(from archive: Data) -> URL? {
    // A keyed archive is a property list; anything else never reaches a parser.
    guard archive.starts(with: Array("bplist00".utf8)) || archive.starts(with: Array("<?xml".utf8)) else {
      return nil
    }
    #if canImport(Darwin)
      return (try? NSKeyedUnarchiver.unarchivedObject(ofClass: NSURL.self, from: archive))?.absoluteURL
    #else
      guard let parsed = try? PropertyListSerialization.propertyList(from: archive, format: nil),
        let root = dictionary(parsed), root["$archiver"] as? String == "NSKeyedArchiver",
        let objects = root["$objects"] as? [Any], let top = root["$top"].flatMap(dictionary),
        let index = uid(top["root"])
      else { return nil }
      return url(at: index, in: objects, depth: 0)?.absoluteURL
    #endif
  }

  private static func url(at index: Int, in objects: [Any], depth: Int) -> URL? {
    guard depth < 8, objects.indices.contains(index), let object = unwrapOptional(objects[index]).flatMap(dictionary),
      let classIndex = uid(object["$class"]), objects.indices.contains(classIndex),
      let classInfo = unwrapOptional(objects[classIndex]).flatMap(dictionary),
      classInfo["$classname"] as? String == "NSURL",
      let relativeIndex = uid(object["NS.relative"]), objects.indices.contains(relativeIndex),
      let relative = unwrapOptional(objects[relativeIndex]) as? String
    else { return nil }
    var base: URL?
    if let baseIndex = uid(object["NS.base"]), baseIndex != 0 {
      guard let resolved = url(at: baseIndex, in: objects, depth: depth + 1) else { return nil }
      base = resolved
    }
    return URL(string: relative, relativeTo: base)
  }

  private static func dictionary(_ value: Any) -> [String: Any]? {
    guard let entries = value as? [AnyHashable: Any] else { return nil }
    var result: [String: Any] = [:]
    for (key, element) in entries {
      guard let name = key.base as? String else { return nil }
      result[name] = unwrapOptional(element)
    }
    return result
  }

  /// The index a `CF$UID` reference names: corelibs parses it as a private `_NSKeyedArchiverUID` object (read
  /// through reflection), other writers' XML as `{"CF$UID": n}`.
  private static func uid(_ value: Any?) -> Int? {
    guard let value = value.flatMap(unwrapOptional) else { return nil }
    if let reference = dictionary(value), reference.count == 1, let index = reference["CF$UID"] as? Int {
      return index
    }
    guard String(describing: type(of: value)).hasSuffix("KeyedArchiverUID") else { return nil }
    for child in Mirror(reflecting: value).children where child.label == "value" {
      if let index = child.value as? UInt32 { return Int(index) }
      if let index = child.value as? Int { return index }
    }
    return nil
  }
}
