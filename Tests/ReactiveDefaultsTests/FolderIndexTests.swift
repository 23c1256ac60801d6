import Foundation
import Testing

@testable import ReactiveDefaults

/// A synced folder's index (``FolderIndex``), updated one file at a time, pulls exactly what a pull that reads every
/// file and ranks every entry pulls (the folder's pull before the index, kept here as the reference): over random
/// histories of device files written, replaced and removed, with honest, dishonest, undecodable, tied and damaged
/// entries.
@Suite struct FolderIndexTests {
  private static let now: Int64 = 1_800_000_000_000
  private static let day: Int64 = 86_400_000

  /// The pull of every file's entries, ranked entry by entry in file-name order (the reference).
  private static func referencePull(
    _ files: [PropertyListKey: [PropertyListKey: PropertyListValue]], now: Int64,
    decoding decodes: (PropertyListKey, PropertyListValue) -> Bool
  ) -> SyncedFolder.Pull {
    var newest: [PropertyListKey: (entry: SyncEntry, stored: PropertyListValue)] = [:]
    var refused: [PropertyListKey: (stamp: SyncStamp, refusal: SyncRefusal)] = [:]
    var undecodable: [PropertyListKey: SyncEntry] = [:]
    for name in files.keys.sorted(by: { Array($0.string.utf8).lexicographicallyPrecedes($1.string.utf8) }) {
      for (key, stored) in files[name]! {
        guard let entry = SyncEntry(stored) else { continue }
        if let reason = entry.stamp.dishonesty(now: now) {
          if let known = refused[key], known.stamp >= entry.stamp { continue }
          refused[key] = (entry.stamp, SyncRefusal(key: key, device: entry.stamp.device, reason: reason))
          continue
        }
        if let value = entry.value, !decodes(key, value) {
          if let known = undecodable[key], !entry.outranks(known) { continue }
          undecodable[key] = entry
          continue
        }
        if let known = newest[key], !entry.outranks(known.entry) { continue }
        newest[key] = (entry, stored)
      }
    }
    var pull = SyncedFolder.Pull(
      entries: Dictionary(uniqueKeysWithValues: newest.map { ($0.key.string, $0.value.stored) }),
      refusals: refused.mapValues(\.refusal))
    for (key, entry) in undecodable where newest[key].map({ entry.outranks($0.entry) }) ?? true {
      pull.refusedForValue[key] = entry.stamp
      if let known = refused[key], known.stamp >= entry.stamp { continue }
      pull.refusals[key] = SyncRefusal(key: key, device: entry.stamp.device, reason: SyncDecision.undecodable)
    }
    return pull
  }

  /// A random stored entry: stamps that tie, run a day ahead or carry counters no clock makes; values of the key's
  /// type (integers), of another (strings), removals, and things that are no entry at all.
  private static func randomStored(_ random: inout SeededRandom) -> PropertyListValue {
    let walls = [now - 2, now - 1, now, now + 2 * day, now + day / 2]
    let counters: [Int64] = [-1, 0, 1, 2, SyncStamp.maximumCounter + 1]
    let devices = ["a", "b", "c"]
    switch random.next(below: 12) {
    case 0: return .integer(7)
    case 1:
      return .dictionary(["t": .integer(Int128(now)), "c": .integer(0)])
    default:
      let value: PropertyListValue? =
        switch random.next(below: 6) {
        case 0: nil
        case 1: .string("text")
        default: .integer(Int128(random.next(below: 3)))
        }
      let stamp = SyncStamp(
        wall: walls[random.next(below: walls.count)], counter: counters[random.next(below: counters.count)],
        device: devices[random.next(below: devices.count)])
      return SyncEntry(stamp: stamp, value: value).propertyListValue
    }
  }

  @Test(arguments: 0..<40)
  func anIndexUpdatedFileByFilePullsWhatReadingEveryFilePulls(seed: Int) {
    var random = SeededRandom(state: UInt64(seed))
    var index = FolderIndex()
    var files: [PropertyListKey: [PropertyListKey: PropertyListValue]] = [:]
    let keys: [PropertyListKey] = ["k0", "k1", "k2"]
    let decodes: (PropertyListKey, PropertyListValue) -> Bool = { key, value in
      // k2 has no type: anything decodes.
      if case .integer = value { return true }
      return key == "k2"
    }
    for step in 0..<60 {
      let name = PropertyListKey("device-\(random.next(below: 6)).plist")
      if random.next(below: 5) == 0 {
        files[name] = nil
        index.update(name, stamp: nil, entries: nil)
      } else {
        var entries: [PropertyListKey: PropertyListValue] = [:]
        for key in keys where random.next(below: 3) != 0 { entries[key] = Self.randomStored(&random) }
        files[name] = entries
        let stamp = SuiteFile.Stamp(size: Int64(step), modified: step, modifiedNanoseconds: 0, inode: UInt64(step))
        index.update(name, stamp: stamp, entries: entries)
      }
      for now in [Self.now, Self.now + 2 * Self.day] {
        let expected = Self.referencePull(files, now: now, decoding: decodes)
        let pulled = index.pull(now: now, decoding: decodes)
        #expect(pulled.entries == expected.entries, "seed \(seed), step \(step)")
        #expect(pulled.refusals == expected.refusals, "seed \(seed), step \(step)")
        #expect(pulled.refusedForValue == expected.refusedForValue, "seed \(seed), step \(step)")
      }
    }
    #expect(Set(index.files.keys) == Set(files.keys))
  }

  /// Many files at once (a sync's start) are sorted in together: the same pull as one file at a time.
  @Test(arguments: 0..<10)
  func manyFilesAtOncePullWhatOneAtATimePulls(seed: Int) {
    var random = SeededRandom(state: UInt64(seed) &+ 1000)
    var one = FolderIndex()
    var many = FolderIndex()
    var files: [PropertyListKey: [PropertyListKey: PropertyListValue]] = [:]
    for round in 0..<4 {
      var changes: [FolderIndex.Change] = []
      for file in 0..<40 where random.next(below: 4) != 0 {
        let name = PropertyListKey("device-\(file).plist")
        var entries: [PropertyListKey: PropertyListValue]? = [:]
        if random.next(below: 4) == 0 {
          entries = nil
        } else {
          for key in ["k0", "k1"] as [PropertyListKey] { entries?[key] = Self.randomStored(&random) }
        }
        let stamp =
          entries == nil ? nil : SuiteFile.Stamp(size: 1, modified: round, modifiedNanoseconds: file, inode: 1)
        changes.append((name, stamp, entries))
        files[name] = entries
        one.update(name, stamp: stamp, entries: entries)
      }
      #expect(changes.count > 16, "the test must take the path of many files")
      many.update(changes)
      let decodes: (PropertyListKey, PropertyListValue) -> Bool = { _, value in
        if case .integer = value { return true }
        return false
      }
      let expected = Self.referencePull(files.compactMapValues { $0 }, now: Self.now, decoding: decodes)
      for index in [one, many] {
        let pulled = index.pull(now: Self.now, decoding: decodes)
        #expect(pulled.entries == expected.entries, "seed \(seed), round \(round)")
        #expect(pulled.refusals == expected.refusals, "seed \(seed), round \(round)")
        #expect(pulled.refusedForValue == expected.refusedForValue, "seed \(seed), round \(round)")
      }
    }
  }

  /// Two file names that differ only by Unicode normalization are two files (the file system keeps both), each with
  /// its entries: removing one leaves the other's.
  @Test func namesEquivalentByUnicodeAreTwoFiles() {
    var index = FolderIndex()
    let composed = PropertyListKey("Zo\u{EB}.plist")
    let decomposed = PropertyListKey("Zoe\u{308}.plist")
    let stamp = SuiteFile.Stamp(size: 1, modified: 1, modifiedNanoseconds: 0, inode: 1)
    func entry(_ counter: Int64, _ value: Int128) -> PropertyListValue {
      SyncEntry(stamp: SyncStamp(wall: Self.now, counter: counter, device: "z"), value: .integer(value))
        .propertyListValue
    }
    index.update(composed, stamp: stamp, entries: ["k": entry(2, 2)])
    index.update(decomposed, stamp: stamp, entries: ["k": entry(1, 1)])
    #expect(index.files.count == 2)
    #expect(index.pull(now: Self.now) { _, _ in true }.entries == ["k": entry(2, 2)])
    index.update(composed, stamp: nil, entries: nil)
    #expect(index.pull(now: Self.now) { _, _ in true }.entries == ["k": entry(1, 1)])
  }

  /// Entries of one stamp whose values `==` calls equal but whose XML differs (a string in its two Unicode
  /// normalizations) are ordered by their XML, like every other pair: in whatever order their files come and go, each
  /// is found where it was put (none is left behind when its file goes), and the pull is the same.
  @Test func valuesEqualButWrittenDifferentlyHaveOnePlaceEach() {
    let stamp = SyncStamp(wall: Self.now, counter: 0, device: "d")
    // "é" decomposed (65 CC 81) and composed (C3 A9) are equal by `==`; the XML of "f" (66) sorts between theirs. A
    // tie of the first two broken by file name would make the order a cycle for some names.
    let values: [PropertyListValue] = [.string("e\u{301}"), .string("\u{E9}"), .string("f"), .string("a")]
    let fileStamp = SuiteFile.Stamp(size: 1, modified: 1, modifiedNanoseconds: 0, inode: 1)
    // A strict total order on these entries: of two whose XML differs, exactly one outranks the other, and transitively.
    let entries = values.map { SyncEntry(stamp: stamp, value: $0) }
    for a in entries {
      for b in entries where a.value.map(XMLPropertyList.encode(value:)) != b.value.map(XMLPropertyList.encode(value:))
      {
        #expect(a.outranks(b) != b.outranks(a), "\(a.value!) and \(b.value!)")
        for c in entries where a.outranks(b) && b.outranks(c) {
          #expect(a.outranks(c), "\(a.value!) > \(b.value!) > \(c.value!)")
        }
      }
    }
    // By the XML of what was pulled: `==` would call the two normalizations one value.
    var pulled: Set<[String: [UInt8]]> = []
    var random = SeededRandom(state: 7)
    for round in 0..<30 {
      var index = FolderIndex()
      let files = (0..<24).map { PropertyListKey("f\($0).plist") }
      for (position, name) in files.enumerated().shuffled(using: &random) {
        let entry = SyncEntry(stamp: stamp, value: values[position % values.count]).propertyListValue
        index.update(name, stamp: fileStamp, entries: ["k": entry])
      }
      pulled.insert(index.pull(now: Self.now) { _, _ in true }.entries.mapValues(XMLPropertyList.encode(value:)))
      for name in files.shuffled(using: &random) { index.update(name, stamp: nil, entries: nil) }
      #expect(index.pull(now: Self.now) { _, _ in true }.entries.isEmpty, "round \(round)")
    }
    #expect(pulled.count == 1)
  }

  /// A file that is no property list holds nothing; replaced by one that is, its entries count.
  @Test func aFileWithoutEntriesHoldsNothingUntilItChanges() {
    var index = FolderIndex()
    let stamp = SuiteFile.Stamp(size: 1, modified: 1, modifiedNanoseconds: 0, inode: 1)
    index.update("x.plist", stamp: stamp, entries: nil)
    #expect(index.pull(now: Self.now) { _, _ in true }.entries.isEmpty)
    #expect(index.files["x.plist"]?.stamp == stamp)
    let entry = SyncEntry(stamp: SyncStamp(wall: Self.now, counter: 0, device: "x"), value: .integer(1))
    index.update("x.plist", stamp: stamp, entries: ["k": entry.propertyListValue])
    #expect(index.pull(now: Self.now) { _, _ in true }.entries == ["k": entry.propertyListValue])
  }
}

extension SeededRandom {
  /// A number from 0 to `count` - 1.
  fileprivate mutating func next(below count: Int) -> Int {
    Int(next() % UInt64(count))
  }
}
