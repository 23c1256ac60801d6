public import Foundation

/// A folder that a file-sync tool carries between machines (Syncthing, Dropbox), as a sync's remote
/// (``DefaultsRemote/folder(_:)``), on every platform.
///
/// Each device writes only its own file, `<device>.plist` (the device's name is the sync's, kept in the store), with
/// atomic saves (a file store's: ``DefaultsStore/init(fileURL:)``), and reads everyone's: so the file-sync tool never
/// sees two writers of one file, and never makes conflict copies. A key's remote entry is the one with the greatest
/// stamp among all the files (of two with one stamp, the one whose value every device ranks first). The
/// folder is watched: another device's file arriving or changing is pulled within milliseconds of the tool writing it
/// (Syncthing and Dropbox write a temporary file and rename it), and this device's own file removed or changed by
/// someone else (from the moment the sync starts) makes it look at every key again, pushing what it wrote. On a network
/// share (NFS, SMB) the file watches do not report other machines' changes: call ``DefaultsSync/synchronize()`` when
/// the app starts or comes to the foreground.
///
/// Files the folder's readers skip: names that do not end in `.plist` (the saves' `.lock` and `.journal` files, which
/// the file-sync tool may ignore), hidden files, and a file that is not a property list (a device's file is read
/// again when it changes). A conflict copy that some tool made anyway is read as one more device's file: the stamps
/// decide, so it does no harm. An entry whose stamp no honest clock makes (a counter near `Int64.max`, a time more
/// than a day ahead of this machine's clock), or, for a sync, whose value does not decode as its key's type, is
/// skipped, so that it can hide no other device's entry of its key; the sync reports it
/// (``DefaultsError/syncRefused(key:reason:)``).
public final class SyncedFolder: DefaultsRemote {
  /// The folder.
  public let folder: URL

  /// Each device's file store, opened at its first start (a folder may serve several stores in one process, each its
  /// own device).
  private let files = Locked<[String: DefaultsStore]>([:])
  /// Per device, its own file's stamp as this process's last push left it, or as the sync found it when it started
  /// (nil: no file): another at a folder event is someone else's doing (the file removed, replaced by a backup, or
  /// emptied), and the sync is told to push again.
  private let pushedStamps = Locked<[String: SuiteFile.Stamp?]>([:])
  /// Per device, this process's pushes under way, and whether an event named the device's own file meanwhile. Such
  /// an event is looked at when the last push ends, against the stamp the push left: the push's own rename is
  /// told before the push can remember its stamp, and taken for someone else's it sent the sync to look at every key
  /// again at once, so that a steady writer's every push started the next run without waiting (a run every 7 ms).
  private let pushes = Locked<[String: (running: Int, eventMeanwhile: Bool)]>([:])
  /// The syncs started here, by device, told of a change of their own file found when a push ends.
  private let listeners = Locked(Listeners())
  private struct Listeners {
    var next: UInt64 = 0
    var byDevice: [String: [UInt64: @Sendable (DefaultsRemoteChange) -> Void]] = [:]
  }
  /// Tests: runs at each step of a push, with its device; and when an event of a device's own file comes while a
  /// push of it is under way (to be looked at when the push ends).
  let pushStep = Locked<(@Sendable (String, PushStep) -> Void)?>(nil)
  let eventDuringPush = Locked<(@Sendable (String) -> Void)?>(nil)
  enum PushStep: Sendable {
    /// Begun, before the save.
    case begun
    /// Saved, before the file's stamp is looked at.
    case saved
    /// The stamp remembered, before the push ends.
    case remembered
  }
  /// The device files' entries as last read (``FolderIndex``): brought up to date one pull at a time, under this
  /// lock (files are read under it; nothing else waits for it).
  private let index = Locked(FolderIndex())
  /// The names of the device files that changed since the index was last brought up to date, as the folder's watches
  /// tell them; nil when any may have (no watch ran all along, the platform's watch tells no names, events were
  /// lost, or ``synchronize()`` asked): then every file's stamp is looked at. With the number of watches running.
  private let changedFiles = Locked<(names: Set<PropertyListKey>?, watches: Int)>((nil, 0))
  /// When the index last looked at every file (``monotonicNanoseconds()``), and the files it could not read then or
  /// since (looked at again at every pull until they are read).
  private let looks = Locked<(lastWhole: UInt64?, unread: Set<PropertyListKey>)>((nil, []))
  /// How often a pull looks at every file all the same: the watch does not tell everything (a file linked into the
  /// folder, a file's permissions changed), and whatever it missed is found within this time of the next event.
  static let wholeLookInterval: UInt64 = 60_000_000_000
  /// The wall clock the stamps are judged by (tests set it, as they set the sync's).
  let now: @Sendable () -> Int64

  /// A remote in `folder` whose entries are judged by the wall clock `now`, in milliseconds since 1970 (the device
  /// checker's devices, whose clocks are skewed: the sync's `now`).
  @_spi(Tools) public init(_ folder: URL, now: @escaping @Sendable () -> Int64) {
    self.folder = folder.standardizedFileURL
    self.now = now
  }

  /// A remote in `folder` (made when the sync starts, if missing).
  public init(_ folder: URL) {
    self.folder = folder.standardizedFileURL
    now = SyncClock.now
  }

  /// A folder has no limits.
  public var limits: DefaultsRemoteLimits { .unlimited }

  /// Opens this device's file and watches the folder until the token ends.
  public func start(device: String, onChange: @escaping @Sendable (DefaultsRemoteChange) -> Void)
    -> DefaultsObservation
  {
    try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    if files.withLock({ $0[device] }) == nil, let url = fileURL(of: device), let file = DefaultsStore(fileURL: url) {
      files.withLock { $0[device] = $0[device] ?? file }
    }
    // The folder's events include this device's own saves (its plist, lock and journal): a change of the remote is
    // another device's file arriving, changing or going, or this device's own file changed or removed by someone
    // else (then every key is looked at again, and what this device wrote is pushed again: a device joining
    // meanwhile would get defaults).
    let seen = Locked(otherFiles(than: device))
    // Known from the start, not from the first push: after a restart, this device's file removed or replaced before
    // it wrote again went unnoticed (the device checker's hostile peers found it).
    let ownName = PropertyListKey(device + ".plist")
    let own = SuiteFile(folder: folder.path, fileName: ownName.string, system: .posix).stamp()
    pushedStamps.withLock { stamps in if stamps[device] == nil { stamps[device] = .some(own) } }
    let watch = FileSystem.watchNames(folder.path) { [weak self] names in
      guard let self else { return }
      let changed: Bool
      if let names {
        // The names the watch tells: a pull reads these files alone.
        let devices = names.filter { Self.isDeviceFile($0.string) }
        noteChanged(devices)
        changed =
          devices.contains { $0 != ownName } || (devices.contains(ownName) && ownFileChangedOutsidePushes(device))
      } else {
        noteChanged(nil)
        let now = otherFiles(than: device)
        let others = seen.withLock { seen in
          defer { seen = now }
          return seen != now
        }
        changed = ownFileChangedOutsidePushes(device) || others
      }
      if changed { onChange(DefaultsRemoteChange(reason: .serverChange, keys: nil)) }
    }
    let listener = listeners.withLock { listeners -> UInt64 in
      listeners.next += 1
      listeners.byDevice[device, default: [:]][listeners.next] = onChange
      return listeners.next
    }
    // What changed before the watch began is not known: the next pull looks at every file.
    changedFiles.withLock { changed in
      changed.names = nil
      if watch != nil { changed.watches += 1 }
    }
    return DefaultsObservation { [weak self] in
      self?.listeners.withLock { _ = $0.byDevice[device]?.removeValue(forKey: listener) }
      guard let watch else { return }
      watch.cancel()
      self?.changedFiles.withLock { changed in
        changed.watches -= 1
        if changed.watches == 0 { changed.names = nil }
      }
    }
  }

  /// Notes that the device files `names` changed (nil: any may have), for the next pull.
  private func noteChanged(_ names: Set<PropertyListKey>?) {
    changedFiles.withLock { changed in
      guard let names else { return changed.names = nil }
      changed.names?.formUnion(names)
    }
  }

  /// Looks at every file's stamp at the next pull: a change that no watch tells (a network share's, a file cut in
  /// place) is found.
  public func synchronize() throws(DefaultsError) {
    noteChanged(nil)
  }

  /// ``ownFileChangedElsewhere(_:)``, unless a push of this device is under way here: then false, and the file is
  /// looked at when the push ends (``endPush(_:)``).
  private func ownFileChangedOutsidePushes(_ device: String) -> Bool {
    let (changed, duringPush) = pushes.withLock { pushes -> (Bool, Bool) in
      if var push = pushes[device] {
        push.eventMeanwhile = true
        pushes[device] = push
        return (false, true)
      }
      // Under the lock: no push of this device begins meanwhile, so the stamp read here is never a push's new one
      // before the push remembers it (an event of the last push, told late, then reads as someone else's change).
      return (ownFileChangedElsewhere(device), false)
    }
    if duringPush { eventDuringPush.withLock { $0 }?(device) }
    return changed
  }

  /// Notes a push of `device` under way: an event of its file is looked at when the push ends.
  private func beginPush(_ device: String) {
    pushes.withLock { pushes in pushes[device, default: (0, false)].running += 1 }
  }

  /// Notes a push of `device` ended (its stamp remembered, or failed); returns whether the file changed elsewhere
  /// since, when an event named it meanwhile (looked at under the lock, as an event is: a push that begins next
  /// cannot be read half done).
  private func endPush(_ device: String) -> Bool {
    pushes.withLock { pushes -> Bool in
      guard var push = pushes[device] else { return false }
      push.running -= 1
      pushes[device] = push.running > 0 ? push : nil
      return push.running == 0 && push.eventMeanwhile && ownFileChangedElsewhere(device)
    }
  }

  /// Tells the syncs started on `device` that the remote changed.
  private func tellChanged(_ device: String) {
    let told = listeners.withLock { $0.byDevice[device].map { Array($0.values) } ?? [] }
    for onChange in told { onChange(DefaultsRemoteChange(reason: .serverChange, keys: nil)) }
  }

  /// Whether this device's own file is no longer as its last push here left it (its stamp is remembered anew, so
  /// that one change is told once).
  private func ownFileChangedElsewhere(_ device: String) -> Bool {
    let now = SuiteFile(folder: folder.path, fileName: device + ".plist", system: .posix).stamp()
    return pushedStamps.withLock { stamps in
      guard let pushed = stamps[device], pushed != now else { return false }
      stamps[device] = .some(now)
      return true
    }
  }

  /// The stamps of the other devices' files (each device's, and a file-sync tool's conflict copies).
  private func otherFiles(than device: String) -> [String: SuiteFile.Stamp] {
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    var stamps: [String: SuiteFile.Stamp] = [:]
    for name in names where Self.isDeviceFile(name) && name != device + ".plist" {
      stamps[name] = SuiteFile(folder: folder.path, fileName: name, system: .posix).stamp()
    }
    return stamps
  }

  /// Whether a name is a device's file: a plist, not hidden.
  private static func isDeviceFile(_ name: String) -> Bool {
    name.hasSuffix(".plist") && !name.hasPrefix(".")
  }

  /// The device's file; nil when the name is no safe file name (``SyncState/isDeviceName(_:)``), which would name a
  /// file outside the folder, or one the others skip.
  private func fileURL(of device: String) -> URL? {
    guard SyncState.isDeviceName(device) else { return nil }
    return folder.appendingPathComponent(device + ".plist")
  }

  /// For each key, the entry with the greatest stamp among every device's file, of those an honest clock could have
  /// stamped (not more than a day ahead of this machine's clock, a counter from 0 to 2^32).
  public func entries() -> [String: PropertyListValue] {
    pull { _, _ in true }.entries
  }

  /// What a sync's pull of a folder finds: per key, the entry it takes, and the entries skipped.
  struct Pull {
    var entries: [String: PropertyListValue] = [:]
    /// The entries to report, by key: the greatest dishonest stamp of each, or the greatest entry that does not
    /// decode where it outranks the entry taken.
    var refusals: [PropertyListKey: SyncRefusal] = [:]
    /// Per key, the stamp of the greatest entry skipped for its value, where it outranks the entry taken (honest:
    /// the sync's clock sees it).
    var refusedForValue: [PropertyListKey: SyncStamp] = [:]
  }

  /// ``entries()``, of those whose value `decodes` as its key's type too (the sync's keys' types): an entry of an app
  /// version whose key has another type, or of another program, is skipped, so that it hides no entry of another
  /// device that this one can take, and reported when it outranks the entry taken. Returned whole, with what it
  /// skipped: a folder may serve several syncs of one process at once.
  func pull(decoding decodes: (PropertyListKey, PropertyListValue) -> Bool) -> Pull {
    // The app's decoders run outside the lock, on a copy of the index.
    refreshedIndex().pull(now: now(), decoding: decodes)
  }

  /// The index brought up to date: the files that changed since the last pull read again (every file's stamp looked
  /// at when which changed is not known, and at least every ``wholeLookInterval``). A file that is no property list
  /// holds nothing until it changes; one that cannot be read (no permission, too many open files) is read again at
  /// every pull until it is.
  private func refreshedIndex() -> FolderIndex {
    index.withLock { index -> FolderIndex in
      refresh(&index)
      return index
    }
  }

  /// ``refreshedIndex()``'s work, holding the index's lock.
  private func refresh(_ index: inout FolderIndex) {
    let now = monotonicNanoseconds()
    let told = changedFiles.withLock { changed -> Set<PropertyListKey>? in
      defer { changed.names = [] }
      return changed.watches > 0 ? changed.names : nil
    }
    let (whole, unread) = looks.withLock { looks -> (Bool, Set<PropertyListKey>) in
      let due = told == nil || looks.lastWhole.map { now &- $0 >= Self.wholeLookInterval } ?? true
      if due { looks.lastWhole = now }
      return (due, looks.unread)
    }
    var looked = told ?? []
    if whole {
      // Listed as the file system spells each name: two that differ only by Unicode normalization are two files.
      let listed = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
      looked = Set(listed.filter(Self.isDeviceFile).map { PropertyListKey($0) }).union(index.files.keys)
    }
    looked.formUnion(unread)
    var changes: [FolderIndex.Change] = []
    var stillUnread: Set<PropertyListKey> = []
    for name in looked {
      // Every save of a device's file is a rename: a read without its lock sees one whole version.
      let file = SuiteFile(folder: folder.path, fileName: name.string, system: .posix)
      let stamp = file.stamp()
      if let stamp, index.files[name]?.stamp == stamp { continue }
      if stamp == nil && index.files[name] == nil { continue }
      // Stamped before the read: a file replaced meanwhile has another stamp, and its rename is one more event.
      guard stamp != nil else {
        changes.append((name, nil, nil))
        continue
      }
      switch Result(catching: { () throws(SuiteFileProblem) in try file.settledRead()?.entries }) {
      case .success(let entries): changes.append((name, stamp, entries))
      case .failure(.cannotRead):
        // Not the file's content: its entries are left out until it is read.
        stillUnread.insert(name)
        changes.append((name, nil, nil))
      case .failure: changes.append((name, stamp, nil))
      }
    }
    looks.withLock { $0.unread = stillUnread }
    index.update(changes)
  }

  /// Writes the entries into this device's file, in one atomic save.
  public func store(_ entries: [String: PropertyListValue], from device: String) throws(DefaultsError) {
    guard let url = fileURL(of: device) else {
      throw .syncFailed(
        reason: "the device name \"\(device)\" is no safe file name, so it has no file in \(folder.path)")
    }
    guard let own = files.withLock({ $0[device] }) ?? DefaultsStore(fileURL: url) else {
      throw .syncFailed(reason: "the folder \(folder.path) cannot hold a file named \(device).plist")
    }
    beginPush(device)
    pushStep.withLock { $0 }?(device, .begun)
    var changedBefore = false
    var changedAfter = false
    defer {
      // After the push, not while it runs: the run under way looks again when it ends.
      if endPush(device) || changedBefore || changedAfter { tellChanged(device) }
    }
    do {
      try own.edit { tx in
        // Under the file's lock, right before the save: a change of someone else's since the last push (its event
        // may come while this push runs, and be taken for the push's own) is told when the push ends. (A push of
        // this device in another sync of this process, ended but not yet remembered, reads as one too: one more
        // look at every key.)
        changedBefore = ownFileChangedElsewhere(device)
        for (key, entry) in entries { tx.record(.set(entry), forName: key) }
      }
      pushStep.withLock { $0 }?(device, .saved)
      let stamp = SuiteFile(folder: folder.path, fileName: device + ".plist", system: .posix).stamp()
      // The file as the save left it (the store's record knows its stamp), or someone else's since the save's rename:
      // then told when the push ends (an event of it, meanwhile, was taken for the push's own).
      changedAfter = own.hub.persistence.map { !$0.record.isFile(stamp) } ?? false
      pushedStamps.withLock { $0[device] = .some(stamp) }
      // Known now, not when the watch tells it: the next pull reads what this push wrote.
      noteChanged([PropertyListKey(device + ".plist")])
      pushStep.withLock { $0 }?(device, .remembered)
    } catch let error as DefaultsError {
      throw error
    } catch {
      throw .syncFailed(reason: "\(error)")
    }
  }
}

extension DefaultsRemote where Self == SyncedFolder {
  /// A folder that a file-sync tool carries between machines (``SyncedFolder``).
  ///
  /// - Parameter url: The folder.
  public static func folder(_ url: URL) -> SyncedFolder {
    SyncedFolder(url)
  }
}
