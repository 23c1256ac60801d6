import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

@Suite(.linuxOnly) struct WritesDuringASaveTests {
  /// One process, one truth: a removal of ours corelibs had not recorded (its copy lacked the key), then a plain
  /// `UserDefaults` write of the key, heard through `refresh()`: the plain write is the later one, so it is what
  /// reads give, what observers hear and what the save writes. (Before, the library's unsaved removal was read and
  /// saved over it.) The save's merge drops corelibs' copy and loads it again: observers stay on the saved value.
  @Test func aPlainWriteAfterARemovalOfOursIsReadHeardAndSaved() async throws {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let key = DefaultsKey<Int>("k", default: -1)
    store[DefaultsKey<Int>("a", default: 0)] = 1
    try await offThePool { try store.save() }
    let seen = Recorder<Int>()
    let token = store.property(key).observe { seen.append($0) }
    store.reset(key)  // corelibs' copy lacks `k`: it records nothing
    UserDefaults(suiteName: name)!.set(7, forKey: "k")
    #expect(store[key] == 7)
    store.refresh()
    #expect(seen.values == [-1, 7])
    try await offThePool { try store.save() }
    let saved = try #require(suiteFileBytes(name))
    #expect((try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any])?["k"] as? Int == 7)
    #expect(store[key] == 7)
    #expect(seen.values.last == 7, "\(seen.values)")
    #expect(issues.values.isEmpty)
    withExtendedLifetime(token) {}
  }

  /// A write of ours made after a save took its writes and before corelibs saved: corelibs' file holds it and every
  /// write of the save, so the save keeps that file (same inode: no rename, so writes need not wait for one) and
  /// removes its journal. The file is stamped anew to the nanosecond, as a journal is: corelibs' in-place write bears
  /// the file system's coarse time, and another process's next in-place save of the same size in the same tick would
  /// read as this one.
  @Test func aSaveKeepsCorelibsFileWhenItHoldsEveryWrite() async throws {
    let (store, issues) = makeStore(.suite)
    let path = try #require(store.hub.persistence?.file.path)
    let file = try #require(store.hub.persistence?.file)
    let key = DefaultsKey<Int>("k", default: 0)
    store[key] = 1
    try store.save()
    // The file as corelibs wrote it in the first save, then as that save left it (seen when the next save begins:
    // the timer's save of the write made during the first may come first, or the test's).
    let stamps = Recorder<SuiteFile.Stamp?>()
    TrackedFile.saveSteps.withLock { hooks in
      hooks[path] = { step in
        switch (step, stamps.count) {
        case (.beforeCorelibsSave, 0): store[key] = 3
        case (.afterCorelibsSave, 0), (.beforeCorelibsSave, 1): stamps.append(file.stamp())
        default: break
        }
      }
    }
    defer { _ = TrackedFile.saveSteps.withLock { $0.removeValue(forKey: path) } }
    store[key] = 2
    try await offThePool { try store.save() }
    try await offThePool { try store.save() }
    #expect(await stamps.wait(timeout: 10) { $0.count == 2 })
    let written = try #require(stamps.values.first ?? nil)
    let left = try #require(stamps.values.last ?? nil)
    #expect(left.inode == written.inode)
    #expect(left.modified != written.modified || left.modifiedNanoseconds != written.modifiedNanoseconds)
    let saved = try #require(suiteFileBytes(store.suiteName!))
    let domain = try PropertyListSerialization.propertyList(from: saved, format: nil)
    #expect((domain as? [String: Any])?["k"] as? Int == 3)
    #expect(!FileManager.default.fileExists(atPath: file.journalPath))
    #expect(store[key] == 3)
    #expect(issues.values.isEmpty)
  }
}
