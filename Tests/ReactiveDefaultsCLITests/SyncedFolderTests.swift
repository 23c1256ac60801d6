import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// Sync through a synced folder on real suites, real files and real second processes: each device writes only its
/// own `<device>.plist` there, reads everyone's, and hears another device's file change through the folder's watch.
@Suite(.linuxOnly) struct SyncedFolderTests {
  private let level = DefaultsKey<Int>("level", default: 1)

  /// The device name a store's sync state holds.
  private func deviceName(of store: DefaultsStore) -> String? {
    guard case .dictionary(let fields)? = store.hub.storage.value(forKey: DefaultsSync.stateKey),
      case .string(let device)? = fields["device"]
    else { return nil }
    return device
  }

  private func plists(in folder: String) -> [String] {
    ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0.hasSuffix(".plist") }.sorted()
  }

  @Test func twoDevicesConvergeAndEachWritesOnlyItsOwnFile() async throws {
    let config = makeConfigFolder()
    let folder = config + "/synced"
    let stores = [
      DefaultsStore(suiteName: makeSuiteName("device-a"))!, DefaultsStore(suiteName: makeSuiteName("device-b"))!,
    ]
    let syncs = stores.map { $0.sync(level, with: .folder(URL(fileURLWithPath: folder))) }
    // The second device waits without reading: only the folder's watch can tell it.
    let heard = Recorder<Int>()
    let token = stores[1].property(level).observe { heard.append($0) }
    stores[0][level] = 5
    #expect(await heard.wait(timeout: 30) { $0.last == 5 }, "\(heard.values)")
    stores[1][level] = 6
    let heardBack = Recorder<Int>()
    let back = stores[0].property(level).observe { heardBack.append($0) }
    #expect(await heardBack.wait(timeout: 30) { $0.last == 6 }, "\(heardBack.values)")
    let devices = try stores.map { try #require(deviceName(of: $0)) }
    #expect(plists(in: folder) == devices.map { $0 + ".plist" }.sorted())
    // Once each: the pulled 5, then its own 6.
    #expect(heard.values == [1, 5, 6])
    token.cancel()
    back.cancel()
    withExtendedLifetime(syncs) {}
  }

  @Test func aWriteInAnotherProcessReachesAQuietObserverHere() async throws {
    let config = makeConfigFolder()
    let other = makeConfigFolder()
    let folder = config + "/synced"
    let store = try #require(DefaultsStore(suiteName: makeSuiteName("here")))
    let sync = store.sync(level, with: .folder(URL(fileURLWithPath: folder)))
    let heard = Recorder<Int>()
    let token = store.property(level).observe { heard.append($0) }
    let child = try RunningTool(
      ["syncwrite", "there", folder, "level", "42"], config: other, tool: "rdefaults-test-helper")
    #expect(await child.lines.wait(timeout: 30) { $0.contains("synced") }, "\(child.errorLines.lines)")
    #expect(await heard.wait(timeout: 30) { $0.last == 42 }, "\(heard.values)")
    child.send("")
    #expect(await child.exited())
    // This device wrote nothing: it has no file there.
    #expect(plists(in: folder).count == 1)
    token.cancel()
    withExtendedLifetime(sync) {}
  }

  /// A process killed after its write was saved in the suite, before its sync pushed it: the next start of a sync
  /// of that suite finds the write unstamped and pushes it.
  @Test func aWriteKilledBeforeItsPushIsPushedByTheNextStart() async throws {
    let folder = makeConfigFolder() + "/synced"
    let config = makeConfigFolder()
    let suite = "killed-\(UUID())"
    let killed = try RunningTool(
      ["syncwrite", suite, folder, "level", "5", "--saved"], config: config, tool: "rdefaults-test-helper")
    #expect(await killed.lines.wait(timeout: 30) { $0.contains("saved") }, "\(killed.errorLines.lines)")
    await killed.kill(SIGKILL)
    #expect(SyncedFolder(URL(fileURLWithPath: folder)).entries()["level"] == nil)
    // Started again, writing the value the suite already holds (no change, so no write): only the start's look at
    // the unstamped value can push it.
    let again = try RunningTool(
      ["syncwrite", suite, folder, "level", "5"], config: config, tool: "rdefaults-test-helper")
    #expect(await again.lines.wait(timeout: 30) { $0.contains("synced") }, "\(again.errorLines.lines)")
    let entries = SyncedFolder(URL(fileURLWithPath: folder)).entries()
    again.send("")
    #expect(await again.exited())
    guard case .dictionary(let fields)? = entries["level"] else {
      Issue.record("no entry of level: \(entries)")
      return
    }
    #expect(fields["v"] == .integer(5))
  }

  /// An app and its widget: two processes syncing one suite share one device (its name is in the suite), so the
  /// folder gets one file, not two devices fighting.
  @Test func twoProcessesOfOneSuiteAreOneDevice() async throws {
    let config = makeConfigFolder()
    let folder = config + "/synced"
    let suite = makeSuiteName("app")
    let store = try #require(DefaultsStore(suiteName: suite))
    let sync = store.sync(level, with: .folder(URL(fileURLWithPath: folder)))
    // The child opens the suite where this process does.
    let child = try RunningTool(
      ["syncwrite", suite, folder, "level", "8"], config: SuiteFile.preferencesFolder, tool: "rdefaults-test-helper")
    #expect(await child.lines.wait(timeout: 30) { $0.contains("synced") }, "\(child.errorLines.lines)")
    child.send("")
    #expect(await child.exited())
    let device = try #require(deviceName(of: store))
    #expect(plists(in: folder) == [device + ".plist"])
    let entry = try #require(SyncedFolder(URL(fileURLWithPath: folder)).entries()["level"].flatMap(SyncEntry.init))
    #expect(entry.stamp.device == device)
    #expect(entry.value == .integer(8))
    #expect(store[level] == 8)
    withExtendedLifetime(sync) {}
  }

  /// A pull at a folder event reads only the files the event names; a change no watch tells (a file written in place
  /// and not closed yet: inotify tells a write when the file is closed, as a network share tells nothing) is found by
  /// `synchronize()`, which looks at every file of the folder again.
  @Test func aChangeNoWatchTellsIsFoundBySynchronize() async throws {
    let folder = makeConfigFolder() + "/synced"
    let store = try #require(DefaultsStore(suiteName: makeSuiteName("here")))
    let sync = store.sync(level, with: .folder(URL(fileURLWithPath: folder)))
    #expect(await sync.waitUntilIdle(timeout: .seconds(30)))
    let heard = Recorder<Int>()
    let token = store.property(level).observe { heard.append($0) }
    let entry = SyncEntry(stamp: SyncStamp(wall: SyncClock.now(), counter: 0, device: "other"), value: .integer(7))
    let bytes = SuiteFile.encode(["level": entry.propertyListValue])
    let descriptor = open(folder + "/other.plist", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
    try #require(descriptor >= 0)
    defer { close(descriptor) }
    #expect(bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) } == bytes.count)
    sync.synchronize()
    #expect(await heard.wait(timeout: 30) { $0.last == 7 }, "\(heard.values)")
    token.cancel()
  }

  /// Writes `entries` as `name` in `folder` the way a file-sync tool does: whole, then renamed over the old file.
  private func replace(_ name: String, in folder: String, with entries: [PropertyListKey: PropertyListValue]) throws {
    let temporary = folder + "/.incoming-" + UUID().uuidString
    try Data(SuiteFile.encode(entries)).write(to: URL(fileURLWithPath: temporary))
    try #require(rename(temporary, folder + "/" + name) == 0)
  }

  /// A push's own rename is told by the folder's watch before the push remembers its stamp: it is no change of the
  /// remote (before, a steady writer's every push sent its sync to look at every key again at once: 49 or 50 tells
  /// here). Only the other device's file, written after the pushes, is told; beside the whole suite, twice in two
  /// runs of two (once for the file, once for a look at every file, whose cause was not found), never more.
  @Test func aPushOfThisDeviceIsNoChangeOfTheRemote() async throws {
    let folder = makeConfigFolder() + "/synced"
    let remote = SyncedFolder(URL(fileURLWithPath: folder))
    let told = Recorder<Int>()
    let token = remote.start(device: "mine") { _ in told.append(told.count) }
    let pushes = 50
    let pushed = Recorder<Bool>()
    // Pushes wait for the disk: on a thread of their own.
    Thread.detachNewThread {
      for write in 1...pushes {
        let entry = SyncEntry(
          stamp: SyncStamp(wall: SyncClock.now(), counter: 0, device: "mine"), value: .integer(Int128(write)))
        pushed.append((try? remote.store(["level": entry.propertyListValue], from: "mine")) != nil)
      }
    }
    #expect(await pushed.wait(timeout: 60) { $0.count == pushes })
    #expect(pushed.values.allSatisfy { $0 })
    // The watch tells events in order: once the other device's file is told, every push's event was looked at.
    let other = SyncEntry(stamp: SyncStamp(wall: SyncClock.now(), counter: 0, device: "other"), value: .integer(0))
    try replace("other.plist", in: folder, with: ["level": other.propertyListValue])
    #expect(await told.wait(timeout: 30) { !$0.isEmpty })
    #expect(told.count <= 2, "\(told.count) changes told for \(pushes) pushes and one other device's file")
    token.cancel()
  }

  /// Someone else's change of this device's file while a push of it runs (an event the push would take for its own)
  /// is told when the push ends: made before the push saves (the push saves over it, keeping what it held), between
  /// the save and the push's look at the file's stamp, or after the push remembered the stamp.
  @Test(arguments: [SyncedFolder.PushStep.begun, .saved, .remembered])
  func aChangeOfItsOwnFileDuringAPushIsToldWhenThePushEnds(at step: SyncedFolder.PushStep) async throws {
    let folder = makeConfigFolder() + "/synced"
    let remote = SyncedFolder(URL(fileURLWithPath: folder))
    let told = Recorder<Int>()
    let token = remote.start(device: "mine") { _ in told.append(told.count) }
    let first = SyncEntry(stamp: SyncStamp(wall: SyncClock.now(), counter: 0, device: "mine"), value: .integer(1))
    try remote.store(["level": first.propertyListValue], from: "mine")
    // The watch tells events in order: once another device's file is told, the first push's own event was looked at
    // (it cannot stand for the backup's below).
    let other = SyncEntry(stamp: SyncStamp(wall: SyncClock.now(), counter: 0, device: "other"), value: .integer(0))
    try replace("other.plist", in: folder, with: ["level": other.propertyListValue])
    #expect(await told.wait(timeout: 30) { !$0.isEmpty })
    let toldBefore = told.count
    let replaced = Recorder<Bool>()
    remote.pushStep.withLock { hook in
      hook = { [self] device, reached in
        guard reached == step else { return }
        remote.pushStep.withLock { $0 = nil }
        // A backup put back over this device's file while the push runs; the push (on a thread of its own) then
        // waits until the watch has told an event of the file during the push.
        let told = DispatchSemaphore(value: 0)
        remote.eventDuringPush.withLock { $0 = { _ in told.signal() } }
        let old = SyncEntry(stamp: SyncStamp(wall: 1, counter: 0, device: device), value: .integer(1))
        replaced.append((try? replace(device + ".plist", in: folder, with: ["level": old.propertyListValue])) != nil)
        replaced.append(told.wait(timeout: .now() + 30 * timeoutScale) == .success)
        remote.eventDuringPush.withLock { $0 = nil }
      }
    }
    let entry = SyncEntry(stamp: SyncStamp(wall: SyncClock.now(), counter: 1, device: "mine"), value: .integer(2))
    let pushed = Recorder<Bool>()
    Thread.detachNewThread {
      pushed.append((try? remote.store(["level": entry.propertyListValue], from: "mine")) != nil)
    }
    #expect(await pushed.wait(timeout: 60) { !$0.isEmpty })
    #expect(pushed.values == [true])
    #expect(replaced.values == [true, true], "the replacement failed, or the watch never told it during the push")
    #expect(await told.wait(timeout: 30) { $0.count > toldBefore }, "the replaced file was never told")
    token.cancel()
  }
}
