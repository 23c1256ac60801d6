import Dispatch
import Foundation
import Synchronization
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

#if canImport(Darwin)
  import CoreFoundation
#endif

/// A fresh suite for one test: a unique name, so tests run in parallel without sharing state. Its files (and those
/// of names that begin with it) are removed when the test process exits.
func makeSuiteName(_ function: String = #function) -> String {
  let label = function.prefix { $0.isLetter || $0.isNumber }
  let name = "ReactiveDefaultsTests.\(label).\(UUID().uuidString)"
  madeSuites.withLock { $0.append(name) }
  _ = removesMadeSuitesAtExit
  return name
}

/// The suites `makeSuiteName` made in this process.
private let madeSuites = Locked<[String]>([])

/// Removes the made suites at exit, so that `swift test` leaves nothing in the preferences folder: on Linux their
/// files (`~/.config` unless `XDG_CONFIG_HOME` names another), after the library's pending saves, so that none writes
/// a file after; on Apple platforms, where the preferences daemon owns the files (in `~/Library/Preferences`), each
/// suite's domain, then any file the daemon left. (Not the standard domain there: under Xcode it is the test
/// runner's own, and the tests reset the keys they write in it.)
private let removesMadeSuitesAtExit: Void = {
  #if os(Linux)
    atexit {
      SaveOnExit.saveAll()
      // The test process's own domain too (`UserDefaults.standard`, which some tests write).
      let names = madeSuites.withLock { $0 } + [ProcessInfo.processInfo.processName + ".plist"]
      let folder = preferencesFolder
      // A suite still watched reloads when its file goes, and a reload takes the suite's lock (making its lock file
      // again): lock files go last, and the folder is listed again until a pass finds nothing (a few passes at most).
      for _ in 0..<5 {
        let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
          .filter { file in names.contains { file.hasPrefix($0) } }
          .sorted { !$0.hasSuffix(".lock") && $1.hasSuffix(".lock") }
        if files.isEmpty { break }
        for file in files { try? FileManager.default.removeItem(at: folder.appendingPathComponent(file)) }
      }
    }
  #else
    atexit {
      let names = madeSuites.withLock { $0 }
      for name in names {
        UserDefaults.standard.removePersistentDomain(forName: name)
        // The daemon applies the removal asynchronously: a process about to exit synchronizes.
        _ = CFPreferencesAppSynchronize(name as CFString)
      }
      let folder = preferencesFolder
      let files = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? [])
        .filter { file in names.contains { file.hasPrefix($0) } }
      for file in files { try? FileManager.default.removeItem(at: folder.appendingPathComponent(file)) }
    }
  #endif
}()

/// A store over a fresh suite, with its issues recorded.
func makeStore(_ function: String = #function) -> (DefaultsStore, Recorder<DefaultsError>) {
  let store = DefaultsStore(suiteName: makeSuiteName(function))!
  let issues = Recorder<DefaultsError>()
  store.issueHandler = { issues.append($0) }
  return (store, issues)
}

/// The folder of the platform's preferences files: on Linux corelibs' (`$XDG_CONFIG_HOME` when absolute, else
/// `~/.config`), on Apple platforms the preferences daemon's (`~/Library/Preferences`).
var preferencesFolder: URL {
  URL(fileURLWithPath: DefaultsStore.preferencesFolder)
}

/// Deletes a suite's plist file (for tests that flushed to disk).
func removeSuiteFile(_ suiteName: String) {
  try? FileManager.default.removeItem(at: preferencesFolder.appendingPathComponent("\(suiteName).plist"))
}

/// A URL of a test fixture (Apple Foundation data kept in `Fixtures/`).
func fixtureURL(_ name: String) -> URL {
  Bundle.module.resourceURL!.appendingPathComponent("Fixtures").appendingPathComponent(name)
}

extension DefaultsKeys {
  static let volume = DefaultsKey<Double>("volume", default: 0.5)
  static let count = DefaultsKey<Int>("count", default: 0)
  static let name = DefaultsKey<String>("name", default: "")
  static let documentURL = DefaultsKey<URL?>("documentUrl")
  static let theme = DefaultsKey<Theme>("theme", default: .system)
  static let layout = DefaultsKey<Layout>("layout", default: .init())
  static let flag = DefaultsKey<Bool>("flag", default: false)
  static let nickname = DefaultsKey<String?>("nickname")
}

enum Theme: String, DefaultsValue, CaseIterable {
  case light, dark, system
}

struct Layout: DefaultsCodable, Equatable {
  var columns = 2
  var title = "main"
}

/// A Codable type that is not Equatable: de-duplication must work on its stored form.
struct Opaque: DefaultsCodable {
  var items: [String]
}

/// A binary property list (`bplist00`) built object by object, for inputs no well-behaved writer makes: shared
/// references and extreme nesting. References and offsets are 4 bytes wide.
struct HandMadeBinaryPlist {
  private(set) var objects: [[UInt8]] = []

  /// Adds an object's encoded bytes; returns its reference.
  @discardableResult
  mutating func add(_ bytes: [UInt8]) -> Int {
    objects.append(bytes)
    return objects.count - 1
  }

  static func reference(_ index: Int) -> [UInt8] {
    withUnsafeBytes(of: UInt32(index).bigEndian) { Array($0) }
  }

  /// An array (or, with `dictionary`, a dictionary: keys then values) of the given references.
  static func container(_ references: [Int], dictionary: Bool = false) -> [UInt8] {
    let count = dictionary ? references.count / 2 : references.count
    let marker: UInt8 = dictionary ? 0xD0 : 0xA0
    let header: [UInt8] =
      count < 15
      ? [marker | UInt8(count)] : [marker | 0x0F, 0x12] + withUnsafeBytes(of: UInt32(count).bigEndian) { Array($0) }
    return header + references.flatMap(reference)
  }

  static func string(_ text: String) -> [UInt8] {
    [0x50 | UInt8(text.utf8.count)] + Array(text.utf8)
  }

  static func integer(_ value: UInt8) -> [UInt8] { [0x10, value] }

  /// The file, with `top` as its root object.
  func data(top: Int) -> Data {
    var bytes = Array("bplist00".utf8)
    var offsets: [Int] = []
    for object in objects {
      offsets.append(bytes.count)
      bytes += object
    }
    let table = bytes.count
    for offset in offsets { bytes += Self.reference(offset) }
    bytes += [0, 0, 0, 0, 0, 0, 4, 4]
    for value in [objects.count, top, table] { bytes += withUnsafeBytes(of: UInt64(value).bigEndian) { Array($0) } }
    return Data(bytes)
  }

  /// `{"k": a0}` where each array `a<i>` holds `a<i+1>` twice, `levels` deep: a few hundred bytes that stand for
  /// 2^levels objects.
  static func referenceBomb(levels: Int) -> Data {
    var plist = HandMadeBinaryPlist()
    let root = plist.add([])
    let key = plist.add(string("k"))
    let first = plist.objects.count
    for level in 0..<levels { plist.add(container([first + level + 1, first + level + 1])) }
    plist.add(integer(1))
    plist.objects[root] = container([key, first], dictionary: true)
    return plist.data(top: root)
  }

  /// `{"count": 5, "deep": [[[…1…]]]}` with `depth` nested arrays.
  static func deepDomain(depth: Int) -> Data {
    var plist = HandMadeBinaryPlist()
    let root = plist.add([])
    let countKey = plist.add(string("count"))
    let five = plist.add(integer(5))
    let deepKey = plist.add(string("deep"))
    let first = plist.objects.count
    for level in 0..<depth { plist.add(container([first + level + 1])) }
    plist.add(integer(1))
    plist.objects[root] = container([countKey, deepKey, five, first], dictionary: true)
    return plist.data(top: root)
  }
}

/// The storages that storage-neutral tests run against: a real suite (`UserDefaults`, its file) and memory.
enum Storage: String, CaseIterable, Sendable, CustomTestStringConvertible {
  case suite
  case memory

  var testDescription: String { rawValue }
}

/// A store over a fresh suite or a new in-memory store, with its issues recorded.
func makeStore(_ storage: Storage, _ function: String = #function) -> (DefaultsStore, Recorder<DefaultsError>) {
  switch storage {
  case .suite: return makeStore(function)
  case .memory:
    let store = DefaultsStore.inMemory()
    let issues = Recorder<DefaultsError>()
    store.issueHandler = { issues.append($0) }
    return (store, issues)
  }
}

/// Removes the file at `path` (`unlink`, as a plain `rm` does: a writer that takes no lock) at the first `step` of a
/// save of it while `body` runs; returns whether it did, once per removal (`[true]`: removed once).
func removingFile(
  _ path: String, at step: TrackedFile.SaveStep, during body: () async throws -> Void
) async rethrows -> [Bool] {
  let removed = Recorder<Bool>()
  TrackedFile.saveSteps.withLock { hooks in
    hooks[path] = { current in
      guard current == step, removed.count == 0 else { return }
      removed.append(unlink(path) == 0)
    }
  }
  defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
  try await body()
  return removed.values
}

/// A binary property list the fuzzer found (base64), which the binary reader must refuse without crashing.
let fuzzerFindingBinaryPlist =
  "YnBsaXN0MHDYAQIDBAUGBwgBDQ4PEBMUFVFuVGRhdGVRZFFzUWFRaVEAAAAAdGHRCgtRa6EMIz/4AAAAAAAAM8HNJ+RAAAAA"
  + "Iz/gAAAAAAAAVHRleHTCERIQAWF0YSoJQgECCBkbGSIkJigqLzI0Nj9IUVZZW11fYAAAAAAAAAEBAAAAAAAAABYAAAAAAAAA"
  + "AAAAAAAAAABj"
