// A hostile or careless peer's operations on a synced folder (DevicePlan's garbage, forge, deleteFile, conflictCopy
// and emptyFolder), shared by DeviceRun and DeviceProcessRun. Every file it writes appears whole, by a rename, as a
// file-sync tool's do.
import Foundation
import HistoryChecker
@_spi(Tools) import ReactiveDefaults

struct HostileFolder {
  let folder: URL

  /// The hostile peer's file, which the history's records leave out (its entries are no device's writes).
  static let fileName = DevicePlan.hostileDevice + ".plist"

  /// The entry of `kind`, stamped by the hostile peer at `time` (the true time, within 3 hours of every device's).
  static func entry(_ kind: DevicePlan.Garbage, time: Int64) -> PropertyListValue {
    var fields: [PropertyListKey: PropertyListValue] = [
      "t": .integer(Int128(time)), "c": .integer(0), "d": .string(DevicePlan.hostileDevice),
    ]
    switch kind {
    case .string: fields["v"] = .string("not a number")
    case .hugeInteger: fields["v"] = .integer(Int128(UInt64.max))
    case .dictionary: fields["v"] = .dictionary(["v": .integer(1)])
    case .counterAtMaximum: (fields["c"], fields["v"]) = (.integer(Int128(Int64.max)), .integer(3))
    case .negativeCounter: (fields["c"], fields["v"]) = (.integer(-1), .integer(3))
    case .wallAhead: (fields["t"], fields["v"]) = (.integer(Int128(time) + 2 * 86_400_000), .integer(3))
    case .missingCounter: (fields["c"], fields["v"]) = (nil, .integer(3))
    case .notAnEntry: return .string("garbage")
    }
    return .dictionary(fields)
  }

  /// Adds the garbage entry of `key` to the hostile peer's file.
  func garbage(key: Int, kind: Int, time: Int64) throws {
    guard let kind = DevicePlan.Garbage(rawValue: kind) else { return }
    var entries = try read(Self.fileName) ?? [:]
    entries[PropertyListKey(DevicePlan.keys[key])] = Self.entry(kind, time: time)
    try write(entries, to: Self.fileName)
  }

  /// Replaces the device's file (named `device`.plist) by a copy whose entry of `key` holds `value`, with its stamp;
  /// returns the name of the device the stamp names (the file's own, or another's whose entry it pushed again), nil
  /// when the file holds no entry of the key.
  func forge(device: String, key: Int, value: Int) throws -> String? {
    let name = device + ".plist"
    let field = PropertyListKey(DevicePlan.keys[key])
    guard var entries = try read(name), case .dictionary(var entry)? = entries[field],
      case .string(let writer)? = entry["d"]
    else { return nil }
    entry["v"] = .integer(Int128(value))
    entries[field] = .dictionary(entry)
    try write(entries, to: name)
    return writer
  }

  /// Deletes the file `name` (nothing when there is none).
  func delete(_ name: String) throws {
    do {
      try FileManager.default.removeItem(at: folder.appendingPathComponent(name))
    } catch CocoaError.fileNoSuchFile {
      return
    }
  }

  /// Copies the device's file beside it under a conflict copy's name (nothing when there is none).
  func conflictCopy(device: String, tag: Int) throws {
    guard let entries = try read(device + ".plist") else { return }
    try write(entries, to: "\(device).sync-conflict-\(tag).plist")
  }

  /// Deletes every file in the folder.
  func empty() throws {
    for name in try FileManager.default.contentsOfDirectory(atPath: folder.path) {
      try delete(name)
    }
  }

  /// The entries of the file `name`; nil when there is none.
  private func read(_ name: String) throws -> [PropertyListKey: PropertyListValue]? {
    let url = folder.appendingPathComponent(name)
    guard FileManager.default.fileExists(atPath: url.path) else { return nil }
    return try DefaultsStore.domain(fromPropertyList: Data(contentsOf: url))
  }

  /// Writes `entries` to the file `name`, whole, by a rename over it.
  private func write(_ entries: [PropertyListKey: PropertyListValue], to name: String) throws {
    let temporary = folder.appendingPathComponent(".\(name).hostile-\(UUID().uuidString)")
    try DefaultsStore.xmlPropertyList(entries).write(to: temporary)
    guard rename(temporary.path, folder.appendingPathComponent(name).path) == 0 else {
      let problem = String(cString: strerror(errno))
      try? FileManager.default.removeItem(at: temporary)
      throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "rename of \(name): \(problem)"])
    }
  }
}

extension HostileFolder {
  /// Runs one of the hostile or careless peer's operations of the plan (operation `index`), with each device's sync
  /// name (nil: not joined; device `names.count` is the hostile peer) and the true time; returns the forgery made, if
  /// any. What fails is a problem of the run (a record in `problems`).
  func apply(_ operation: DevicePlan.Operation, index: Int, names: [String?], time: Int64, problems: inout [String])
    -> DeviceHistory.Forgery?
  {
    func fileName(_ device: Int) -> String? {
      device == names.count ? Self.fileName : names[device].map { $0 + ".plist" }
    }
    do {
      switch operation {
      case .garbage(let key, let kind):
        try garbage(key: key, kind: kind, time: time)
      case .forge(let device, let key, let value):
        guard let name = names[device], let writer = try forge(device: name, key: key, value: value) else { return nil }
        return DeviceHistory.Forgery(operation: index, key: key, value: value, device: writer)
      case .deleteFile(let device):
        if let name = fileName(device) { try delete(name) }
      case .conflictCopy(let device):
        if let name = names[device] { try conflictCopy(device: name, tag: index) }
      case .emptyFolder:
        try empty()
      default:
        break
      }
    } catch {
      problems.append("the hostile operation \(operation) failed: \(error)")
    }
    return nil
  }
}
