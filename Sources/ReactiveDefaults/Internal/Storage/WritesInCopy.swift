import Foundation
import Synchronization

/// The library's unsaved writes of one suite as corelibs' copy holds them (Linux): per key, the object the write left
/// in the copy, so that a save can tell whether a plain `UserDefaults` write or removal of this process came after
/// the library's. corelibs announces no write, so the object is the only witness: corelibs copies every value it
/// stores, so a later plain write (or removal) of the key leaves another object (or none) in its place. In a process
/// the last write wins, whichever API made it: the save writes the plain one, and the library's reads (which read
/// the copy) already gave it.
///
/// The one other thing that replaces an object is corelibs loading its copy again (a synchronize), which it does only
/// for keys it holds no unsaved write of: a synchronize keeps each key on its dirty list with the very object the
/// copy held, saves it and empties the list; a later one loads every other key from the file. So each synchronize of
/// the library's is bracketed (``CorelibsDomain/synchronize(file:)``): before it, a key whose object changed since it was
/// last looked at was written plainly (no load of the library's came in between); after it, each key's object is
/// looked at again. (The library's own synchronizes and its writes never overlap: both hold the suite's write gates.
/// A `UserDefaults.synchronize()` of the app's that loads the copy again between the library's write and its save
/// reads here as a plain write of the value the file held, which is the value corelibs' save had just written.)
///
/// A write of the library's that corelibs held no record of (the value its copy held already, or the removal of a key
/// it lacked: it keeps no unsaved record of either) is lost from the copy when a synchronize loads the key from a
/// file holding another value (another process's save, made before the copy was loaded again). Such a key is marked
/// ``Entry/reloadedAway``, and reads of it give the library's write (``reloadedValue(forKey:reading:)``) until the
/// save writes it, or a plain write of this process replaces the object again. A plain write of the key can land in
/// the same synchronize (run on another thread: a background save, another thread's flush), so a changed object is
/// taken for a load only if the file the synchronize loads holds its value (``FileBefore``): corelibs' copy was the
/// file as it is, so no load could change the key, or the file holds the value the copy has now.
final class WritesInCopy: Sendable {
  /// One key's last write of the library's, as the copy held it when last looked at.
  private struct Entry: @unchecked Sendable {  // `object` is only compared by identity, never used or mutated
    /// The object the copy held for the key (nil: none), kept to be compared by identity (an address alone could be
    /// reused once freed).
    var object: AnyObject?
    /// The value the library wrote (nil: removed).
    var value: PropertyListValue?
    /// A plain write came after the library's: the copy's value is the one to save.
    var overtaken: Bool
    /// A synchronize loaded another value of the key into the copy: the library's write is the one to read.
    var reloadedAway = false
    /// corelibs holds the write on its list of unsaved keys (the write changed the copy), until a synchronize saves
    /// it: a synchronize keeps such a key's object, so one that changes it is a plain write racing that synchronize
    /// (on another thread: the library's saves run beside the app's writes), not a load from the file.
    var unsavedInCopy = false
    /// A synchronize of the library's saved the write (corelibs held it as unsaved, and its save succeeded): the file
    /// holds it. Every synchronize of the library's runs under the suite's lock, so no other process's value of the
    /// key can be loaded until the save that made it ends, and forgets the write (or, when it left corelibs' copy
    /// stale, keeps it ``committed`` until the next load, which would find another process's value only after that
    /// process's own save): a changed object meanwhile is a plain write of this process (one that landed inside a
    /// later synchronize of the same save, as the first of a save's two did).
    var savedInFile = false
    /// Which write this is (``marks(_:)``).
    var sequence: UInt64 = 0
    /// A save committed the write while leaving corelibs' copy older than the file (``forget(_:copyIsFile:)``): the
    /// record stands for the file until corelibs loads it again, then goes.
    var committed = false

    /// Whether a changed object of the key is told from a load of the file only by what the file held
    /// (``FileBefore``): corelibs holds no unsaved write of it.
    var isJudgedByTheFile: Bool { !overtaken && !unsavedInCopy && !savedInFile }
  }

  private let entries = Locked<[PropertyListKey: Entry]>([:])
  /// An object of the copy as a property-list value (``CorelibsDomain/propertyListValue(of:)``).
  private let convert: @Sendable (AnyObject) -> PropertyListValue?

  init(converting convert: @escaping @Sendable (AnyObject) -> PropertyListValue?) {
    self.convert = convert
  }
  /// How many entries are ``Entry/reloadedAway`` (reads look only when some are).
  private let reloadedAwayCount = Atomic<Int>(0)
  private let writeCount = Atomic<UInt64>(0)

  /// Records the object the library's write of `value` (nil: a removal) to `key` left in the copy (nil: the key is
  /// absent), and whether a plain write is known to have come after it (`overtaken`).
  /// `unsaved`: the write changed the copy, so corelibs holds it as unsaved (``Entry/unsavedInCopy``).
  func noteWrite(
    forKey key: String, value: PropertyListValue?, left object: AnyObject?, overtaken: Bool, unsaved: Bool
  ) {
    let sequence = writeCount.add(1, ordering: .relaxed).newValue
    entries.withLock { entries in
      let old = entries.updateValue(
        Entry(object: object, value: value, overtaken: overtaken, unsavedInCopy: unsaved, sequence: sequence),
        forKey: PropertyListKey(key))
      if old?.reloadedAway == true { reloadedAwayCount.subtract(1, ordering: .relaxed) }
    }
  }

  /// The library's write of `key` (`.some(nil)`: its removal) when a synchronize loaded another value over it and no
  /// plain write replaced that since; nil otherwise (read the copy). `read` reads the copy's object for a key.
  func reloadedValue(forKey key: String, reading read: (String) -> AnyObject?) -> PropertyListValue?? {
    guard reloadedAwayCount.load(ordering: .relaxed) > 0 else { return nil }
    guard let entry = entries.withLock({ $0[PropertyListKey(key)] }), entry.reloadedAway, !entry.overtaken else {
      return nil
    }
    guard isUnchanged(entry, now: read(key)) else { return nil }
    return .some(entry.value)
  }

  /// What the file held as a synchronize began, which corelibs' load of the file (in the synchronize, or at the
  /// first read after it) reads: the synchronize holds the suite's lock, so no process using the library changes the
  /// file until the load.
  enum FileBefore {
    /// corelibs' copy was the file as it is: every key it holds no unsaved write of held the file's value, and a load
    /// changes none of them.
    case copyIsFile
    /// The file's keys and values (none: no file).
    case entries([PropertyListKey: PropertyListValue])
    /// Not known (the file could not be read): a changed value counts as loaded.
    case unknown
  }

  /// Whether some write is one corelibs keeps no record of (or whose value a load took, or that a save committed),
  /// whose object only a load or a plain write can change (a synchronize then needs ``FileBefore`` to tell the two
  /// apart).
  var hasWritesCorelibsSkipped: Bool {
    entries.withLock { entries in entries.values.contains(where: \.isJudgedByTheFile) }
  }

  /// Whether the copy's object `now` is still what `entry` looked at: the same object, or, for a key whose change is
  /// judged by the file, the same value anew (corelibs loaded its copy again outside the library: the app's own
  /// `UserDefaults.synchronize()` drops every domain with nothing unsaved).
  private func isUnchanged(_ entry: Entry, now: AnyObject?) -> Bool {
    now === entry.object || (entry.isJudgedByTheFile && now.flatMap(convert) == entry.object.flatMap(convert))
  }

  /// Before a synchronize of the library's: the keys whose object changed since they were looked at were written
  /// plainly. `read` reads the copy's object for a key.
  func beforeSynchronize(reading read: (String) -> AnyObject?) {
    look(reading: read) { _, entry, now in
      if isUnchanged(entry, now: now) {
        entry.object = now
      } else {
        entry.overtaken = true
      }
      return true
    }
  }

  /// After a synchronize of the library's (`saved`: corelibs' save succeeded, emptying its list of unsaved keys):
  /// each key's object as the copy holds it now (corelibs loaded those it held no unsaved write of), and whether that
  /// lost the library's write. A key corelibs held as unsaved kept its object through the synchronize: a changed one
  /// was written plainly meanwhile, on another thread (the save of a background save runs beside the app's writes).
  /// So was one whose write an earlier synchronize saved (``Entry/savedInFile``). Of the others, one whose value
  /// changed was loaded from the file only if the file held that value (`file`); else it was written plainly. That
  /// holds for a key a load already took from the library's write (``Entry/reloadedAway``: a plain write can land in
  /// a later synchronize too) and for a write a save committed (``Entry/committed``: once corelibs loaded the file,
  /// which holds it or a later process's value, its record goes).
  func afterSynchronize(reading read: (String) -> AnyObject?, saved: Bool, file: FileBefore) {
    look(reading: read) { key, entry, now in
      if now !== entry.object {
        if entry.unsavedInCopy || entry.savedInFile {
          entry.overtaken = true
        } else {
          let value = now.flatMap(convert)
          let before = entry.object.flatMap(convert)
          let loaded: Bool
          switch file {
          // What the file held is what a load gives.
          case .entries(let entries): loaded = entries[key] == value
          // corelibs' copy was the file: a load changes no value, and gives the same value anew (a plain write of
          // that value cannot be told from it, and changes nothing).
          case .copyIsFile: loaded = value == before
          case .unknown: loaded = true
          }
          if !loaded {
            entry.overtaken = true
          } else if entry.committed {
            return false
          } else if value != entry.value, !entry.reloadedAway {
            entry.reloadedAway = true
            reloadedAwayCount.add(1, ordering: .relaxed)
          } else if value == entry.value, entry.reloadedAway {
            // The file holds the library's write again (its save committed it): the copy gives it.
            entry.reloadedAway = false
            reloadedAwayCount.subtract(1, ordering: .relaxed)
          }
        }
      }
      if saved && entry.unsavedInCopy {
        entry.unsavedInCopy = false
        entry.savedInFile = true
      }
      entry.object = now
      return true
    }
  }

  /// Runs `update` on each entry not overtaken, with the object the copy holds for its key now; an entry for which
  /// `update` returns false is forgotten.
  private func look(
    reading read: (String) -> AnyObject?, _ update: (PropertyListKey, inout Entry, AnyObject?) -> Bool
  ) {
    let taken = entries.withLock { $0 }
    guard !taken.isEmpty else { return }
    var seen: [PropertyListKey: AnyObject?] = [:]
    for (key, entry) in taken where !entry.overtaken { seen[key] = read(key.string) }
    entries.withLock { entries in
      for (key, now) in seen {
        // Unless written again meanwhile (not by the library, whose writes wait: a removal of the key by `forget`).
        guard var entry = entries[key], entry.object === taken[key]?.object, !entry.overtaken else { continue }
        if update(key, &entry, now) {
          entries[key] = entry
        } else if entries.removeValue(forKey: key)?.reloadedAway == true {
          reloadedAwayCount.subtract(1, ordering: .relaxed)
        }
      }
    }
  }

  /// `writes` (the library's, as a save took them) with each key that a plain write of this process changed since
  /// the library's given the value the copy holds now. `read` reads the copy's object for a key.
  func withLaterPlainWrites(
    _ writes: [PropertyListKey: PropertyListValue?], reading read: (String) -> AnyObject?
  ) -> [PropertyListKey: PropertyListValue?] {
    let taken = entries.withLock { entries in writes.keys.compactMap { key in entries[key].map { (key, $0) } } }
    var result = writes
    for (key, entry) in taken {
      let now = read(key.string)
      guard entry.overtaken || !isUnchanged(entry, now: now) else { continue }
      guard let now else {
        result[key] = .some(nil)
        continue
      }
      // A value that is no property-list value (not written by this library) leaves the library's.
      if let value = convert(now) { result[key] = .some(value) }
    }
    return result
  }

  /// Which write of each of `keys` is recorded now, for ``forget(_:)``.
  func marks(_ keys: some Sequence<PropertyListKey>) -> [PropertyListKey: UInt64] {
    entries.withLock { entries in
      var marks: [PropertyListKey: UInt64] = [:]
      for key in keys { if let entry = entries[key] { marks[key] = entry.sequence } }
      return marks
    }
  }

  /// Forgets the writes `marks` names once a save wrote them and corelibs' copy holds the file (a later write of a
  /// key stays recorded). With `copyIsFile` false (the save left corelibs' copy older than the file: a write of ours
  /// during the save kept it from being dropped), they are forgotten only once a load makes the copy the file
  /// (``copyLoaded()``): until then a write whose value the copy lacks (one it kept no record of, loaded away) is
  /// read from its record, not from the copy, which would give another process's older value after this process's
  /// write had returned and been saved.
  func forget(_ marks: [PropertyListKey: UInt64], copyIsFile: Bool = true) {
    entries.withLock { entries in
      for (key, sequence) in marks where entries[key]?.sequence == sequence {
        if !copyIsFile {
          entries[key]?.committed = true
        } else if entries.removeValue(forKey: key)?.reloadedAway == true {
          reloadedAwayCount.subtract(1, ordering: .relaxed)
        }
      }
    }
  }

  /// corelibs' copy was loaded from the file, and is recorded as it: the writes saves committed before are forgotten.
  func copyLoaded() {
    entries.withLock { entries in
      for (key, entry) in entries where entry.committed {
        entries.removeValue(forKey: key)
        if entry.reloadedAway { reloadedAwayCount.subtract(1, ordering: .relaxed) }
      }
    }
  }
}
