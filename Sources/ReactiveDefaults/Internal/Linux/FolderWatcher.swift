#if os(Linux)
  import Foundation
  import Glibc
  import Synchronization

  /// Watches one folder with inotify for files finished being written (`IN_CLOSE_WRITE`), deleted (corelibs
  /// deletes the plist of a domain left empty) or moved into
  /// place (`IN_MOVED_TO`), and tells the subscribers of each file name. One watcher per folder per process;
  /// it runs while it has subscribers. (A watch on the file itself would die when the file is replaced.)
  ///
  /// The folder itself may go away (`rm -rf ~/.config`): then the nearest existing folder above it is watched
  /// until the folder is back, and every subscriber is told once it is (files may have been written before the
  /// watch came back). When the kernel's event queue overflows, every subscriber is told too.
  final class FolderWatcher: Sendable {
    /// Ends a subscription when cancelled or released.
    final class Subscription: Sendable {
      private let cancelAction: Locked<(@Sendable () -> Void)?>

      init(_ cancel: @escaping @Sendable () -> Void) { cancelAction = Locked(cancel) }

      func cancel() {
        let action = cancelAction.withLock { action -> (@Sendable () -> Void)? in
          defer { action = nil }
          return action
        }
        action?()
      }

      deinit { cancel() }
    }

    private struct State {
      /// By file name, exactly as the file system spells it (two suites whose names differ only by Unicode
      /// normalization have two files).
      /// Each told the names that changed (nil: any may have); a subscriber of one name is called only when that
      /// name is among them (its closure ignores the names).
      var subscribers: [PropertyListKey: [UInt64: @Sendable (Set<PropertyListKey>?) -> Void]] = [:]
      var nextID: UInt64 = 0
    }

    /// By folder path, exactly as spelled.
    private static let watchers = Locked<[PropertyListKey: FolderWatcher]>([:])

    private let folder: String
    private let inotify: Int32
    /// The watches made at start; the thread owns them from then on.
    private let initialWatches: Watches
    static let folderEvents =
      UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_MOVED_FROM) | UInt32(IN_DELETE) | UInt32(IN_DELETE_SELF)
      | UInt32(IN_MOVE_SELF)
    private let wakePipe: (read: Int32, write: Int32)
    private let state = Locked(State())

    private init?(folder: String) {
      let descriptor = inotify_init1(Int32(IN_CLOEXEC))
      guard descriptor >= 0 else { return nil }
      // A folder that does not exist yet is waited for, like one removed later: watching creates nothing.
      var watches = Watches(folder: folder, current: inotify_add_watch(descriptor, folder, Self.folderEvents))
      if watches.folderWatch < 0 { _ = watches.folderGone(descriptor) }
      guard watches.folderWatch >= 0 || watches.ancestor >= 0 else {
        close(descriptor)
        return nil
      }
      initialWatches = watches
      var pipeEnds: [Int32] = [0, 0]
      guard pipe(&pipeEnds) == 0 else {
        close(descriptor)
        return nil
      }
      for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
      self.folder = folder
      self.inotify = descriptor
      self.wakePipe = (pipeEnds[0], pipeEnds[1])
      let thread = Thread { [self] in self.run() }
      thread.name = "ReactiveDefaults.FolderWatcher"
      thread.start()
    }

    /// Calls `onChange` (on the watcher's thread; keep it short) each time `fileName` in `folder` is written
    /// or replaced (any file of the folder, for an empty `fileName`), until the subscription ends. Nil when the
    /// folder cannot be watched.
    static func subscribe(folder: String, fileName: String, onChange: @escaping @Sendable () -> Void)
      -> Subscription?
    {
      subscribe(folder: folder, fileName: fileName) { _ in onChange() }
    }

    /// Calls `onChange` (on the watcher's thread; keep it short) with the names of the files of `folder` written,
    /// replaced or removed (nil when any may have been: events were lost, or the folder went away and came back),
    /// until the subscription ends. Nil when the folder cannot be watched.
    static func subscribe(folder: String, onNames onChange: @escaping @Sendable (Set<PropertyListKey>?) -> Void)
      -> Subscription?
    {
      subscribe(folder: folder, fileName: "", onChange: onChange)
    }

    private static func subscribe(
      folder: String, fileName: String, onChange: @escaping @Sendable (Set<PropertyListKey>?) -> Void
    ) -> Subscription? {
      watchers.withLock { watchers -> Subscription? in
        guard let watcher = watchers[PropertyListKey(folder)] ?? FolderWatcher(folder: folder) else { return nil }
        watchers[PropertyListKey(folder)] = watcher
        let id = watcher.state.withLock { state -> UInt64 in
          state.nextID += 1
          state.subscribers[PropertyListKey(fileName), default: [:]][state.nextID] = onChange
          return state.nextID
        }
        return Subscription { unsubscribe(watcher, fileName: fileName, id: id) }
      }
    }

    private static func unsubscribe(_ watcher: FolderWatcher, fileName: String, id: UInt64) {
      watchers.withLock { watchers in
        let isEmpty = watcher.state.withLock { state -> Bool in
          let name = PropertyListKey(fileName)
          state.subscribers[name]?[id] = nil
          if state.subscribers[name]?.isEmpty == true { state.subscribers[name] = nil }
          return state.subscribers.isEmpty
        }
        guard isEmpty, watchers[PropertyListKey(watcher.folder)] === watcher else { return }
        watchers[PropertyListKey(watcher.folder)] = nil
        // The pipe is empty and blocking: the one byte is written unless a signal interrupts the call. The thread
        // then closes its descriptors on its own; nobody waits for it: closing an inotify descriptor waits for the
        // kernel's grace period (about 15 ms here), which a store released on the main thread must not pay. A new
        // subscription to the folder meanwhile starts a watcher of its own.
        var byte: UInt8 = 1
        while write(watcher.wakePipe.write, &byte, 1) != 1 && errno == EINTR {}
      }
    }

    private func run() {
      defer {
        close(inotify)
        close(wakePipe.read)
        close(wakePipe.write)
      }
      let bufferSize = 64 * 1024
      let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
      defer { buffer.deallocate() }
      var watches = initialWatches
      var descriptors = [
        pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
        pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0),
      ]
      // The thread ends only when told to (the last subscription ended): while it is registered, subscribers count
      // on it. An unexpected failure of poll or read is waited out (on the wake pipe, so stopping stays prompt), and
      // every subscriber is told then, since events may have been lost.
      var failed = false
      while true {
        if failed {
          failed = false
          var wake = [descriptors[1]]
          if poll(&wake, 1, 100) > 0 { return }
          tellEverySubscriber()
        }
        guard poll(&descriptors, 2, -1) >= 0 else {
          failed = errno != EINTR
          continue
        }
        if descriptors[1].revents != 0 { return }
        guard descriptors[0].revents != 0 else { continue }
        let count = read(inotify, buffer, bufferSize)
        guard count > 0 else {
          failed = !(count < 0 && (errno == EINTR || errno == EAGAIN))
          continue
        }
        var changed = Set<PropertyListKey>()
        var everyFile = false
        var offset = 0
        let headerSize = MemoryLayout<inotify_event>.size
        while offset + headerSize <= count {
          let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
          let nameLength = Int(event.len)
          let name =
            nameLength > 0
            ? String(cString: (buffer + offset + headerSize).assumingMemoryBound(to: CChar.self)) : nil
          offset += headerSize + nameLength
          if event.mask & UInt32(IN_Q_OVERFLOW) != 0 {
            everyFile = true  // events were lost: any file may have changed
          } else if event.wd == watches.folderWatch {
            if event.mask & (UInt32(IN_DELETE_SELF) | UInt32(IN_MOVE_SELF) | UInt32(IN_IGNORED)) != 0 {
              everyFile = watches.folderGone(inotify) || everyFile
            } else if let name {
              changed.insert(PropertyListKey(name))
            }
          } else if event.wd == watches.ancestor {
            // Something appeared in it, or it went away too (IN_IGNORED): look for the folder again.
            if event.mask & UInt32(IN_IGNORED) != 0 { watches.ancestor = -1 }
            everyFile = watches.ancestorChanged(inotify) || everyFile
          }
        }
        if everyFile {
          tellEverySubscriber()
        } else {
          // Subscribers of the empty name (no file has it) hear of every file in the folder.
          let handlers = state.withLock { state in
            changed.flatMap { state.subscribers[$0]?.values ?? [:].values }
              + (changed.isEmpty ? [] : Array(state.subscribers[""]?.values ?? [:].values))
          }
          for handler in handlers { handler(changed) }
        }
      }
    }

    private func tellEverySubscriber() {
      for handler in state.withLock({ $0.subscribers.values.flatMap(\.values) }) { handler(nil) }
    }
  }

  /// The watcher thread's inotify watches: on the folder while it exists, else on its nearest existing ancestor.
  private struct Watches {
    let folder: String
    /// The folder's watch, or -1 while the folder is gone.
    var folderWatch: Int32
    /// The watch on the nearest existing ancestor while the folder is gone, or -1.
    var ancestor: Int32 = -1

    init(folder: String, current: Int32) {
      self.folder = folder
      self.folderWatch = current
    }

    /// The folder was deleted or moved: watch for it to come back. True when it is back already.
    mutating func folderGone(_ inotify: Int32) -> Bool {
      if folderWatch >= 0 { inotify_rm_watch(inotify, folderWatch) }
      folderWatch = -1
      return rewatch(inotify)
    }

    /// Something appeared in the watched ancestor: perhaps the folder (or a folder on the way to it).
    mutating func ancestorChanged(_ inotify: Int32) -> Bool {
      rewatch(inotify)
    }

    /// Watches the folder again if it exists (true), else the nearest existing ancestor. After watching an ancestor
    /// it looks again: the next folder down may have appeared before that watch began.
    private mutating func rewatch(_ inotify: Int32) -> Bool {
      // Bounded: each round follows a folder that appeared meanwhile, and a path has few components.
      for _ in 0..<64 {
        let watch = inotify_add_watch(inotify, folder, FolderWatcher.folderEvents | UInt32(IN_ONLYDIR))
        if watch >= 0 {
          folderWatch = watch
          if ancestor >= 0 && ancestor != watch { inotify_rm_watch(inotify, ancestor) }
          ancestor = -1
          return true
        }
        // The folder exists but cannot be watched (no permission, the watch limit reached): waiting for it to
        // appear would never end.
        guard errno == ENOENT || errno == ENOTDIR else { return false }
        var below = folder
        var path = (folder as NSString).deletingLastPathComponent
        while true {
          let candidate = inotify_add_watch(
            inotify, path, UInt32(IN_CREATE) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE_SELF) | UInt32(IN_ONLYDIR))
          if candidate >= 0 {
            if ancestor >= 0 && ancestor != candidate { inotify_rm_watch(inotify, ancestor) }
            ancestor = candidate
            break
          }
          guard path != "/", !path.isEmpty else { return false }
          below = path
          path = (path as NSString).deletingLastPathComponent
        }
        // Nothing new below the watched ancestor: its watch will tell when something appears.
        if !FileManager.default.fileExists(atPath: below) { return false }
      }
      return false
    }
  }
#endif
