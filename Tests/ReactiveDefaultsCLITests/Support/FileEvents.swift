import Foundation

#if canImport(Glibc)
  import Glibc
#endif

#if os(Linux)
  /// Waits for a file in a folder to be modified, through inotify: the tests kill a writer at that very moment.
  final class ModificationWatch: @unchecked Sendable {  // the descriptor is only read after init
    private let descriptor: Int32
    private let names: Set<String>

    /// Starts watching `folder` now for modifications of the files named `names`.
    init?(folder: String, names: Set<String>) {
      descriptor = inotify_init1(Int32(IN_CLOEXEC | IN_NONBLOCK))
      self.names = names
      guard descriptor >= 0, inotify_add_watch(descriptor, folder, UInt32(IN_MODIFY)) >= 0 else { return nil }
    }

    deinit { close(descriptor) }

    /// Blocks until one of the files is modified (true) or `timeout` seconds pass (false).
    func wait(timeout: Double) -> Bool {
      let deadline = Date().addingTimeInterval(timeout)
      let buffer = UnsafeMutableRawPointer.allocate(byteCount: 64 * 1024, alignment: 8)
      defer { buffer.deallocate() }
      while true {
        let remaining = deadline.timeIntervalSinceNow
        guard remaining > 0 else { return false }
        var descriptors = [pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)]
        guard poll(&descriptors, 1, Int32(remaining * 1000) + 1) > 0 else { continue }
        let count = read(descriptor, buffer, 64 * 1024)
        var offset = 0
        let headerSize = MemoryLayout<inotify_event>.size
        while count > 0, offset + headerSize <= count {
          let event = buffer.load(fromByteOffset: offset, as: inotify_event.self)
          if event.len > 0 {
            let name = String(cString: (buffer + offset + headerSize).assumingMemoryBound(to: CChar.self))
            if names.contains(name) { return true }
          }
          offset += headerSize + Int(event.len)
        }
      }
    }
  }
#else
  /// inotify is Linux's: elsewhere no watch can be made (the suites that use one are Linux-only).
  final class ModificationWatch: Sendable {
    init?(folder: String, names: Set<String>) { return nil }
    func wait(timeout: Double) -> Bool { false }
  }
#endif
