import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

/// Stamps from other devices are bounded (``SyncStamp/dishonesty(now:)``): an entry no honest clock could have
/// stamped is refused and reported once, never fed to this device's clock, and hides no honest entry; a clock saved
/// poisoned before is repaired at start. (Issue 48's first row: an entry stamped with counter `Int64.max` made the
/// next local write of any synced key trap in `SyncClock.tick`, and the poisoned clock, saved, made every later launch
/// trap at its first synced write.)
@Suite struct HostilePeerTests {
  private static let level = DefaultsKey<Int>("level", default: 1)
  private static let day: Int64 = 86_400_000

  /// A hostile or broken device's entry of `level`.
  private static func entry(wall: Int64, counter: Int64, value: Int = 9) -> PropertyListValue {
    SyncEntry(stamp: SyncStamp(wall: wall, counter: counter, device: "hostile"), value: .integer(Int128(value)))
      .propertyListValue
  }

  /// A stamp a hostile device forges: its wall time ahead of this device's clock when the test runs (the arguments
  /// are made when the suite is listed, minutes before a test may run), or at a fixed time.
  enum Forged: Sendable, CustomTestStringConvertible {
    case ahead(Int64, counter: Int64)
    case at(Int64, counter: Int64)

    func stamp(now: Int64) -> (wall: Int64, counter: Int64) {
      switch self {
      case .ahead(let lead, let counter): (now + lead, counter)
      case .at(let wall, let counter): (wall, counter)
      }
    }

    var testDescription: String {
      switch self {
      case .ahead(let lead, let counter): "now + \(lead) ms, counter \(counter)"
      case .at(let wall, let counter): "\(wall) ms since 1970, counter \(counter)"
      }
    }
  }

  static let forged: [Forged] = [
    .ahead(2_000, counter: .max),  // the crash loop's stamp
    .ahead(0, counter: SyncStamp.maximumCounter + 1),
    .ahead(0, counter: -1),
    .at(4_102_444_800_000, counter: 0),  // 2100-01-01
    .ahead(day + 60_000, counter: 0),
    .at(.max, counter: .max),
  ]

  @Test func theBoundsTellAnHonestClockFromOneNone() {
    let now: Int64 = 1_800_000_000_000
    #expect(SyncStamp(wall: now, counter: 0, device: "d").dishonesty(now: now) == nil)
    #expect(SyncStamp(wall: now + Self.day, counter: SyncStamp.maximumCounter, device: "d").dishonesty(now: now) == nil)
    #expect(SyncStamp(wall: -5, counter: 3, device: "d").dishonesty(now: now) == nil, "a clock set before 1970")
    #expect(SyncStamp(wall: now + Self.day + 1, counter: 0, device: "d").dishonesty(now: now) != nil)
    #expect(SyncStamp(wall: now, counter: SyncStamp.maximumCounter + 1, device: "d").dishonesty(now: now) != nil)
    #expect(SyncStamp(wall: now, counter: -1, device: "d").dishonesty(now: now) != nil)
    #expect(SyncStamp(wall: .max, counter: 0, device: "d").dishonesty(now: .max) == nil, "no overflow")
  }

  @Test func theClockNeverTraps() {
    var clock = SyncClock(wall: 5, counter: .max)
    let first = clock.tick(now: 1, device: "d")
    #expect(first == SyncStamp(wall: 6, counter: 0, device: "d"))
    #expect(clock.tick(now: 1, device: "d") > first)
    var last = SyncClock(wall: .max, counter: .max)
    #expect(last.tick(now: 1, device: "d") == SyncStamp(wall: .max, counter: .max, device: "d"))
  }

  @Test(arguments: forged) func aForgedStampIsRefusedReportedOnceAndNeverTakenIn(_ forged: Forged) async throws {
    let cloud = MemoryCloud()
    let (store, issues) = makeStore(.memory)
    store[Self.level] = 3
    let sync = store.sync(["level"], with: cloud.connect(), now: SyncClock.now)
    let statuses = Recorder<DefaultsSync.Status>()
    let watch = sync.observeStatus { statuses.append($0) }
    defer { watch.cancel() }
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    let (wall, counter) = forged.stamp(now: SyncClock.now())
    try cloud.connect().store(["level": Self.entry(wall: wall, counter: counter)], from: "hostile")
    cloud.deliverAll()
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    #expect(store[Self.level] == 3, "the local value stays")
    // The next local write is stamped by an untouched clock (it trapped here) and pushed over the forged entry.
    store[Self.level] = 4
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    cloud.deliverAll()
    sync.synchronize()
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    let pushed = try #require(cloud.entries()["level"].flatMap(SyncEntry.init))
    #expect(pushed.value == .integer(4))
    #expect(pushed.stamp.dishonesty(now: SyncClock.now()) == nil, "\(pushed.stamp)")
    let state = try #require(SyncState(store.hub.storage.value(forKey: DefaultsSync.stateKey)))
    #expect(state.clock.isHonest(now: SyncClock.now()), "\(state.clock)")
    let refusals = issues.values.filter { if case .syncRefused(key: "level", _) = $0 { true } else { false } }
    #expect(refusals.count == 1, "\(issues.values)")
    #expect(statuses.values.contains { if case .problem(.syncRefused) = $0 { true } else { false } })
  }

  /// The crash loop: a state saved before stamps were bounded, its clock and a record poisoned.
  @Test func aPoisonedClockSavedBeforeIsRepairedAtStart() async throws {
    let (store, issues) = makeStore(.memory)
    let now = SyncClock.now()
    var poisoned = SyncState(device: "here")
    poisoned.bounded = false  // saved before stamps were bounded
    poisoned.clock = SyncClock(wall: now + 2_000, counter: .max)
    let forged = SyncEntry(stamp: SyncStamp(wall: now + 2_000, counter: .max, device: "hostile"), value: .integer(9))
    poisoned.records["level"] = .stamped(forged, pending: false)
    try store.edit { tx in
      tx.record(.set(poisoned.propertyListValue), forName: DefaultsSync.stateKey)
      tx.record(.set(.integer(9)), forName: "level")
    }
    let cloud = MemoryCloud()
    let honest = cloud.connect()
    try honest.store(
      [
        "level": SyncEntry(stamp: SyncStamp(wall: now - 1_000, counter: 0, device: "honest"), value: .integer(5))
          .propertyListValue
      ], from: "honest")
    cloud.deliverAll()
    let sync = store.sync(["level"], with: cloud.connect(), now: SyncClock.now)
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    #expect(store[Self.level] == 5, "an honest entry wins over the record the forged stamp left")
    store[Self.level] = 6
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    cloud.deliverAll()
    let state = try #require(SyncState(store.hub.storage.value(forKey: DefaultsSync.stateKey)))
    #expect(state.clock.isHonest(now: SyncClock.now()), "\(state.clock)")
    #expect(cloud.entries()["level"].flatMap(SyncEntry.init)?.value == .integer(6))
    #expect(issues.values.isEmpty, "\(issues.values)")
  }

  /// In a synced folder every device's file is read, and the greatest stamp of a key wins: a forged stamp would hide
  /// every honest device's entry of the key.
  @Test func aForgedEntryInASyncedFolderHidesNoHonestOne() async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("hostile-\(UUID())")
    defer { try? FileManager.default.removeItem(at: folder) }
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    let now = SyncClock.now()
    func write(_ device: String, _ entry: SyncEntry) throws {
      let plist = PropertyListValue.dictionary(["level": entry.propertyListValue]).foundationObject
      try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
        .write(to: folder.appendingPathComponent("\(device).plist"))
    }
    try write(
      "honest", SyncEntry(stamp: SyncStamp(wall: now - 1_000, counter: 0, device: "honest"), value: .integer(5)))
    try write(
      "hostile", SyncEntry(stamp: SyncStamp(wall: now + 2_000, counter: .max, device: "hostile"), value: .integer(9)))
    #expect(SyncedFolder(folder).entries()["level"].flatMap(SyncEntry.init)?.value == .integer(5))
    let (store, issues) = makeStore(.memory)
    let sync = store.sync(["level"], with: SyncedFolder(folder), now: SyncClock.now)
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    #expect(store[Self.level] == 5)
    store[Self.level] = 6
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    #expect(SyncedFolder(folder).entries()["level"].flatMap(SyncEntry.init)?.value == .integer(6))
    let refusals = issues.values.filter { if case .syncRefused(key: "level", _) = $0 { true } else { false } }
    #expect(refusals.count == 1, "\(issues.values)")
    withExtendedLifetime(sync) {}
  }

  @Test func aDeviceNameIsASafeFileName() {
    for name in [
      "../escaped", "a/b", "a\\b", "", ".hidden", "..", "x\u{0}y", "tab\there", "a:b",
      String(repeating: "é", count: 65),
    ] {
      #expect(!SyncState.isDeviceName(name), "\(name)")
    }
    for name in [UUID().uuidString, "MacBook-Pro", "Ünïcode device", String(repeating: "a", count: 128)] {
      #expect(SyncState.isDeviceName(name), "\(name)")
    }
  }

  /// A device name `../escaped` in the stored sync state made the sync write `<folder>/../escaped.plist`.
  @Test func aStoredDeviceNameThatEscapesTheFolderIsRefused() async throws {
    let root = FileManager.default.temporaryDirectory.appendingPathComponent("escape-\(UUID())")
    defer { try? FileManager.default.removeItem(at: root) }
    let folder = root.appendingPathComponent("synced")
    let (store, issues) = makeStore(.memory)
    var escaping = SyncState(device: "../escaped")
    escaping.clock = SyncClock(wall: SyncClock.now() - 1_000, counter: 0)
    try store.edit { tx in tx.record(.set(escaping.propertyListValue), forName: DefaultsSync.stateKey) }
    let sync = store.sync(["level"], with: SyncedFolder(folder), now: SyncClock.now)
    store[Self.level] = 7
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    let left = try FileManager.default.contentsOfDirectory(atPath: root.path)
    #expect(left == ["synced"], "\(left)")
    let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".plist") }
    #expect(files.count == 1 && files.allSatisfy { SyncState.isDeviceName(String($0.dropLast(6))) }, "\(files)")
    #expect(SyncedFolder(folder).entries()["level"].flatMap(SyncEntry.init)?.value == .integer(7))
    #expect(throws: DefaultsError.self) {
      try SyncedFolder(folder).store(["level": .integer(1)], from: "../escaped")
    }
    #expect(!FileManager.default.fileExists(atPath: root.appendingPathComponent("escaped.plist").path))
    #expect(issues.values.isEmpty, "\(issues.values)")
    withExtendedLifetime(sync) {}
  }

  /// An entry with a well-formed stamp and a value of another type (what an older or newer app version writes, or
  /// another program) replaced the good local value on every device, which then read its default.
  @Test(arguments: [false, true]) func aValueThatDoesNotDecodeNeverReplacesTheLocalOne(stringKey: Bool) async throws {
    let cloud = MemoryCloud()
    let (store, issues) = makeStore(.memory)
    let name = DefaultsKey<String>("name", default: "none")
    if stringKey { store[name] = "mine" } else { store[Self.level] = 3 }
    let sync = stringKey ? store.sync(name, with: cloud.connect()) : store.sync(Self.level, with: cloud.connect())
    let statuses = Recorder<DefaultsSync.Status>()
    let watch = sync.observeStatus { statuses.append($0) }
    defer { watch.cancel() }
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    let stamp = SyncStamp(wall: SyncClock.now(), counter: 0, device: "other-version")
    let wrong: PropertyListValue = stringKey ? .integer(5) : .string("abc")
    try cloud.connect().store(
      [stringKey ? "name" : "level": SyncEntry(stamp: stamp, value: wrong).propertyListValue], from: "other-version")
    cloud.deliverAll()
    sync.synchronize()
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    #expect(stringKey ? store[name] == "mine" : store[Self.level] == 3, "the local value stays")
    let refusals = issues.values.filter { if case .syncRefused = $0 { true } else { false } }
    #expect(refusals.count == 1, "\(issues.values)")
    #expect(statuses.values.contains { if case .problem(.syncRefused) = $0 { true } else { false } })
    // Written again, the local value is pushed over the entry it refused.
    if stringKey { store[name] = "again" } else { store[Self.level] = 4 }
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    cloud.deliverAll()
    let pushed = cloud.entries()[stringKey ? "name" : "level"].flatMap(SyncEntry.init)
    #expect(pushed?.value == (stringKey ? .string("again") : .integer(4)))
    #expect(sync.status == .idle)
  }

  @Test func entriesWithOneStampAreOrderedTheSameWayEverywhere() {
    let stamp = SyncStamp(wall: 1_800_000_000_000, counter: 0, device: "d")
    let values: [PropertyListValue?] = [nil, .integer(5), .integer(9), .string("a"), .dictionary(["x": .bool(true)])]
    for a in values {
      for b in values {
        let (first, second) = (SyncEntry(stamp: stamp, value: a), SyncEntry(stamp: stamp, value: b))
        if a == b {
          #expect(!first.outranks(second))
        } else {
          #expect(
            first.outranks(second) != second.outranks(first), "\(String(describing: a)), \(String(describing: b))")
        }
      }
    }
    // Two devices holding one stamp with different values each pick the same.
    var holdsFive = SyncState(device: "x")
    var holdsNine = SyncState(device: "y")
    let five = SyncEntry(stamp: stamp, value: .integer(5))
    let nine = SyncEntry(stamp: stamp, value: .integer(9))
    holdsFive.records["k"] = .stamped(five, pending: false)
    holdsNine.records["k"] = .stamped(nine, pending: false)
    let here = holdsFive.reconcile("k", current: .integer(5), remote: nine, remoteKnown: true, now: 0)
    let there = holdsNine.reconcile("k", current: .integer(9), remote: five, remoteKnown: true, now: 0)
    let winner = nine.outranks(five) ? nine : five
    #expect(holdsFive.records["k"]?.value == winner.value)
    #expect(holdsNine.records["k"]?.value == winner.value)
    #expect((here.write == .some(winner.value)) != (there.write == .some(winner.value)))
  }

  /// A device syncing `level` through `folder`, once it wrote 5 and pushed it; its own file in the folder.
  private func deviceThatWroteFive(in folder: URL) async throws -> (DefaultsStore, DefaultsSync, URL) {
    let (store, _) = makeStore(.memory)
    let sync = store.sync(["level"], with: SyncedFolder(folder), now: SyncClock.now)
    store[Self.level] = 5
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    let own = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".plist") }
    try #require(own.count == 1)
    return (store, sync, folder.appendingPathComponent(own[0]))
  }

  /// A synced folder's device file removed (by hand, by a file-sync tool's mistake): the device pushes what it wrote
  /// again, with no write of its own, and a device joining afterwards gets the values, not defaults.
  /// (Not the whole folder deleted and made again at once: the folder's watch, looking for the folder again, can miss
  /// that it came back empty; a run under load missed it once in four.)
  /// Also after the app restarted its sync and pushed nothing since (the device checker found that only a push of
  /// this run made the device notice its file).
  @Test(arguments: [false, true]) func aDevicesOwnFileRemovedIsPushedAgain(restarted: Bool) async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("removed-\(UUID())")
    defer { try? FileManager.default.removeItem(at: folder) }
    let (first, synced, ownURL) = try await deviceThatWroteFive(in: folder)
    var firstSync = synced
    if restarted {
      firstSync.cancel()
      firstSync = first.sync(["level"], with: SyncedFolder(folder), now: SyncClock.now)
      #expect(await firstSync.waitUntilIdle(timeout: syncIdleBound))
    }
    try FileManager.default.removeItem(at: ownURL)
    let (joining, _) = makeStore(.memory)
    let joiningSync = joining.sync(["level"], with: SyncedFolder(folder), now: SyncClock.now)
    let heard = Recorder<Int>()
    let token = joining.property(Self.level).observe { heard.append($0) }
    defer { token.cancel() }
    #expect(await heard.wait(timeout: 30 * timeoutScale) { $0.last == 5 }, "\(heard.values)")
    withExtendedLifetime((firstSync, joiningSync)) {}
  }

  /// A device's file replaced by one carrying exactly its stamp with another value (a forged copy, or one restored
  /// from a backup): the device and a device that joins pick the same value, by the order on entries, instead of the
  /// device keeping its own and the joining one taking the file's.
  @Test func aDevicesFileReplacedWithItsStampAndAnotherValueConverges() async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("replaced-\(UUID())")
    defer { try? FileManager.default.removeItem(at: folder) }
    let (first, firstSync, ownURL) = try await deviceThatWroteFive(in: folder)
    let pushed = try #require(SyncedFolder(folder).entries()["level"].flatMap(SyncEntry.init))
    let forged = SyncEntry(stamp: pushed.stamp, value: .integer(9))
    let winner = forged.outranks(pushed) ? 9 : 5
    let plist = PropertyListValue.dictionary(["level": forged.propertyListValue]).foundationObject
    try PropertyListSerialization.data(fromPropertyList: plist, format: .xml, options: 0)
      .write(to: ownURL, options: .atomic)
    let heardHere = Recorder<Int>()
    let tokenHere = first.property(Self.level).observe { heardHere.append($0) }
    defer { tokenHere.cancel() }
    let (joining, _) = makeStore(.memory)
    let joiningSync = joining.sync(["level"], with: SyncedFolder(folder), now: SyncClock.now)
    let heard = Recorder<Int>()
    let token = joining.property(Self.level).observe { heard.append($0) }
    defer { token.cancel() }
    #expect(await heard.wait(timeout: 30 * timeoutScale) { $0.last == winner }, "\(heard.values)")
    #expect(await heardHere.wait(timeout: 30 * timeoutScale) { $0.last == winner }, "\(heardHere.values)")
    #expect(await firstSync.waitUntilIdle(timeout: syncIdleBound))
    #expect(await joiningSync.waitUntilIdle(timeout: syncIdleBound))
    #expect(first[Self.level] == joining[Self.level])
  }

  /// In a synced folder, an entry whose value does not decode as the key's type (an app version whose key has
  /// another type) hides no other device's: a device joining after it was written gets the value the others hold, not
  /// its default; and a device whose own file is removed while the refused entry stands pushes its value again. The
  /// device checker's hostile peers found both: the folder handed the sync the newest entry whatever its value, and
  /// the sync, refusing it, looked at the key as if the folder held nothing of this device's.
  @Test func aValueThatDoesNotDecodeHidesNoEntryInAFolder() async throws {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("undecodable-\(UUID())")
    defer { try? FileManager.default.removeItem(at: folder) }
    let (first, issues) = makeStore(.memory)
    let firstSync = first.sync(Self.level, with: SyncedFolder(folder))
    first[Self.level] = 5
    #expect(await firstSync.waitUntilIdle(timeout: syncIdleBound))
    let own = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".plist") }
    try #require(own.count == 1)
    // Another app version's entry, stamped after this device's write.
    let stamp = SyncStamp(wall: SyncClock.now() + 60_000, counter: 0, device: "other-version")
    let entry = SyncEntry(stamp: stamp, value: .string("abc")).propertyListValue
    try PropertyListSerialization.data(
      fromPropertyList: PropertyListValue.dictionary(["level": entry]).foundationObject, format: .xml, options: 0
    ).write(to: folder.appendingPathComponent("other-version.plist"), options: .atomic)
    firstSync.synchronize()
    #expect(await firstSync.waitUntilIdle(timeout: syncIdleBound))
    #expect(first[Self.level] == 5)
    #expect(issues.values.filter { if case .syncRefused = $0 { true } else { false } }.count == 1, "\(issues.values)")
    func joinerHears(_ value: Int) async -> Bool {
      let (joining, _) = makeStore(.memory)
      let sync = joining.sync(Self.level, with: SyncedFolder(folder))
      let heard = Recorder<Int>()
      let token = joining.property(Self.level).observe { heard.append($0) }
      defer { token.cancel() }
      let got = await heard.wait(timeout: 30 * timeoutScale) { $0.last == value }
      withExtendedLifetime(sync) {}
      return got
    }
    #expect(await joinerHears(5), "a device joining takes the newest entry it can decode")
    try FileManager.default.removeItem(at: folder.appendingPathComponent(own[0]))
    #expect(await joinerHears(5), "the device whose file was removed pushed its value again")
    #expect(first[Self.level] == 5)
    // The refused entry's stamp reached the clock all the same: this device's next write outranks it, and wins on a
    // device of the newer version too (the folder's newest entry of any value is it).
    first[Self.level] = 6
    #expect(await firstSync.waitUntilIdle(timeout: syncIdleBound))
    let newest = SyncedFolder(folder).entries()["level"].flatMap(SyncEntry.init)
    #expect(newest?.value == .integer(6), "\(String(describing: newest))")
    // An entry that a later write outranks is no news to a device joining now.
    let (late, lateIssues) = makeStore(.memory)
    let lateSync = late.sync(Self.level, with: SyncedFolder(folder))
    #expect(await lateSync.waitUntilIdle(timeout: syncIdleBound))
    #expect(late[Self.level] == 6)
    #expect(lateIssues.values.isEmpty, "\(lateIssues.values)")
    withExtendedLifetime(firstSync) {}
  }

  /// A stamp at the bounds (a counter of 2^32, a day ahead but a minute) is taken as a value, but not into the clock
  /// beyond what leaves this device's own stamps within what other devices accept: its next write is pushed with a
  /// stamp an honest device takes (seen into the clock whole, every later write of this device was refused).
  @Test(arguments: [
    Forged.ahead(0, counter: SyncStamp.maximumCounter), .ahead(day - 60_000, counter: 0),
    .ahead(day - 60_000, counter: SyncStamp.maximumCounter),
  ])
  func aStampAtTheBoundsLeavesThisDevicesStampsAccepted(_ forged: Forged) async throws {
    let cloud = MemoryCloud()
    let (store, issues) = makeStore(.memory)
    let sync = store.sync(["level"], with: cloud.connect(), now: SyncClock.now)
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    let (wall, counter) = forged.stamp(now: SyncClock.now())
    try cloud.connect().store(["level": Self.entry(wall: wall, counter: counter, value: 9)], from: "hostile")
    cloud.deliverAll()
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    #expect(store[Self.level] == 9, "within the bounds: taken")
    for value in 10..<14 { store[Self.level] = value }
    #expect(await sync.waitUntilIdle(timeout: syncIdleBound))
    cloud.deliverAll()
    let state = try #require(SyncState(store.hub.storage.value(forKey: DefaultsSync.stateKey)))
    // What a device whose clock lags this one's by a minute accepts.
    let lagging = SyncClock.now() - 60_000
    #expect(state.clock.counter <= SyncClock.counterLimit)
    #expect(SyncStamp(wall: state.clock.wall, counter: state.clock.counter, device: "").dishonesty(now: lagging) == nil)
    #expect(issues.values.isEmpty, "\(issues.values)")
  }

  /// The repair runs once, for a state saved before the bounds: a device whose clock later runs behind by more than
  /// a day (a dead clock battery) keeps its stamps and its unpushed writes.
  @Test func aClockThatRunsBehindLaterKeepsTheSyncState() throws {
    let now: Int64 = 1_800_000_000_000
    var state = SyncState(device: "here")
    let own = SyncEntry(stamp: SyncStamp(wall: now, counter: 0, device: "here"), value: .integer(4))
    state.clock = SyncClock(wall: now, counter: 0)
    state.records["k"] = .stamped(own, pending: true)
    let stored = try #require(SyncState(state.propertyListValue))
    #expect(stored.bounded)
    var later = stored
    later.repair(now: now - 3 * Self.day)
    #expect(later == stored, "nothing repaired in a bounded state")
    // An old state (no `b`) with this device's own record stamped by a poisoned clock: stamped again, and pushed.
    var old = stored
    old.bounded = false
    old.clock = SyncClock(wall: now + 2_000, counter: .max)
    old.records["k"] = .stamped(
      SyncEntry(stamp: SyncStamp(wall: now + 2_000, counter: .max, device: "here"), value: .integer(4)), pending: false)
    old.repair(now: now)
    guard case .stamped(let entry, let pending)? = old.records["k"] else {
      Issue.record("not stamped again: \(String(describing: old.records["k"]))")
      return
    }
    #expect(pending)
    #expect(entry.value == .integer(4))
    #expect(entry.stamp.dishonesty(now: now) == nil)
    #expect(old.clock.isHonest(now: now))
  }
}
