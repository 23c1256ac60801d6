#if os(Linux)
  import Foundation
  import Glibc
  import Synchronization

  /// Watches one folder with inotify for files finished being written (`IN_CLOSE_WRITE`), deleted (corelibs
  /// deletes the plist of a domain left empty) or moved into
  /// place (`IN_MOVED_TO`), and tells the subscribers of each file name. One watcher per folder per process;
  /// it runs while it has subscribers. (A watch on the file itself would die when the file is replaced.)
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
      var subscribers: [String: [UInt64: @Sendable () -> Void]] = [:]
      var nextID: UInt64 = 0
    }

    private static let watchers = Locked<[String: FolderWatcher]>([:])

    private let folder: String
    private let inotify: Int32
    private let wakePipe: (read: Int32, write: Int32)
    private let state = Locked(State())
    /// Signalled by the thread as it leaves, after closing its descriptors.
    private let stopped = DispatchSemaphore(value: 0)
    private let threadID = Atomic<UInt>(0)

    private init?(folder: String) {
      try? FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
      let descriptor = inotify_init1(Int32(IN_CLOEXEC))
      guard descriptor >= 0 else { return nil }
      guard inotify_add_watch(descriptor, folder, UInt32(IN_CLOSE_WRITE) | UInt32(IN_MOVED_TO) | UInt32(IN_DELETE)) >= 0
      else {
        close(descriptor)
        return nil
      }
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
    /// or replaced, until the subscription ends. Nil when the folder cannot be watched.
    static func subscribe(folder: String, fileName: String, onChange: @escaping @Sendable () -> Void)
      -> Subscription?
    {
      watchers.withLock { watchers -> Subscription? in
        guard let watcher = watchers[folder] ?? FolderWatcher(folder: folder) else { return nil }
        watchers[folder] = watcher
        let id = watcher.state.withLock { state -> UInt64 in
          state.nextID += 1
          state.subscribers[fileName, default: [:]][state.nextID] = onChange
          return state.nextID
        }
        return Subscription { unsubscribe(watcher, fileName: fileName, id: id) }
      }
    }

    private static func unsubscribe(_ watcher: FolderWatcher, fileName: String, id: UInt64) {
      let stopping = watchers.withLock { watchers -> Bool in
        let isEmpty = watcher.state.withLock { state -> Bool in
          state.subscribers[fileName]?[id] = nil
          if state.subscribers[fileName]?.isEmpty == true { state.subscribers[fileName] = nil }
          return state.subscribers.isEmpty
        }
        guard isEmpty, watchers[watcher.folder] === watcher else { return false }
        watchers[watcher.folder] = nil
        var byte: UInt8 = 1
        _ = write(watcher.wakePipe.write, &byte, 1)
        return true
      }
      // Wait (outside the lock) until the thread has closed its descriptors, so that nothing outlives the last
      // subscription; unless this is the watcher's own thread, which finishes right after the handler returns.
      if stopping && watcher.threadID.load(ordering: .acquiring) != currentThreadID() {
        watcher.stopped.wait()
      }
    }

    private func run() {
      threadID.store(currentThreadID(), ordering: .releasing)
      defer {
        close(inotify)
        close(wakePipe.read)
        close(wakePipe.write)
        stopped.signal()
      }
      let bufferSize = 64 * 1024
      let buffer = UnsafeMutableRawPointer.allocate(byteCount: bufferSize, alignment: 8)
      defer { buffer.deallocate() }
      var descriptors = [
        pollfd(fd: inotify, events: Int16(POLLIN), revents: 0),
        pollfd(fd: wakePipe.read, events: Int16(POLLIN), revents: 0),
      ]
      while true {
        guard poll(&descriptors, 2, -1) >= 0 || errno == EINTR else { return }
        if descriptors[1].revents != 0 { return }
        guard descriptors[0].revents != 0 else { continue }
        let count = read(inotify, buffer, bufferSize)
        guard count > 0 else {
          if count < 0 && (errno == EINTR || errno == EAGAIN) { continue }
          return
        }
        var changed = Set<String>()
        var offset = 0
        let headerSize = MemoryLayout<inotify_event>.size
        while offset + headerSize <= count {
          let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
          let nameLength = Int(event.len)
          if nameLength > 0 {
            let namePointer = (buffer + offset + headerSize).assumingMemoryBound(to: CChar.self)
            changed.insert(String(cString: namePointer))
          }
          offset += headerSize + nameLength
        }
        let handlers = state.withLock { state in changed.flatMap { state.subscribers[$0]?.values ?? [:].values } }
        for handler in handlers { handler() }
      }
    }
  }
#endif
