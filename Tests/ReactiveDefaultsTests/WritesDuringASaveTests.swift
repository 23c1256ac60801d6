import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

@Suite(.linuxOnly) struct WritesDuringASaveTests {
  /// A save whose merge drops corelibs' copy tells the observers what the copy held that the file does not: a
  /// removal of ours corelibs had not recorded (its copy lacked the key then), over a plain `UserDefaults` write of
  /// the key an observer had heard through `refresh()`. The save writes the removal into the file and reloads the
  /// copy; before, its observers kept the copy's value until the key's next change (history checker, seed
  /// 700008733, where the copy got the key from another process's file).
  @Test func observersHearWhatAMergeThatDropsTheCopyChanged() async throws {
    let (store, issues) = makeStore(.suite)
    let name = try #require(store.suiteName)
    let key = DefaultsKey<Int>("k", default: -1)
    store[DefaultsKey<Int>("a", default: 0)] = 1
    try await offThePool { try store.save() }
    let seen = Recorder<Int>()
    let token = store.property(key).observe { seen.append($0) }
    store.reset(key)  // corelibs' copy lacks `k`: it records nothing
    UserDefaults(suiteName: name)!.set(7, forKey: "k")
    store.refresh()
    // The removal is unsaved: reads, and so `refresh()`, answer from it, not from corelibs' copy (which holds 7).
    #expect(seen.values == [-1])
    try await offThePool { try store.save() }
    let saved = try #require(suiteFileBytes(name))
    #expect((try PropertyListSerialization.propertyList(from: saved, format: nil) as? [String: Any])?["k"] == nil)
    #expect(store[key] == -1)
    #expect(await seen.wait { $0.last == -1 }, "\(seen.values)")
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
