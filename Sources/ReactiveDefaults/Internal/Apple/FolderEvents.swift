#if canImport(Darwin)
  import CoreFoundation
  import Foundation

  /// Apple platforms: the changes of a folder's entries, for a file store (``DefaultsStore/init(fileURL:)``), whose
  /// saves and other processes' saves each rename a new file into the folder. A `DispatchSource` file-system object
  /// source on the folder, opened with `O_EVTONLY` (for events only: it does not keep the volume from being
  /// unmounted); a folder's `.write` event means an entry was added, removed or renamed. The source's handler calls
  /// `onChange`, which only starts a reload (``SuitePersistence``): the reload tells the file's own changes from its
  /// neighbours' by the file's stamp. (Unlike Linux's inotify watch, it does not see a program that rewrites the file
  /// in place; reads still do, at their next look at the file.)
  enum FolderEvents {
    /// Watches `folder` until the returned watch is cancelled; nil when the folder cannot be opened (it does not
    /// exist yet: the persistence tries again, and reads still follow the file).
    static func watch(folder: String, onChange: @escaping @Sendable () -> Void) -> FileWatch? {
      let watch = FolderEventWatch(folder: folder, onChange: onChange)
      guard watch.arm() else { return nil }
      return FileWatch { watch.cancel() }
    }
  }

  /// One folder's source, opened again when the folder itself is removed, renamed or revoked (the descriptor then
  /// names a folder that is no longer there: later saves in a folder made again would go unseen), every 50 ms until
  /// it can be, as Linux's watcher waits for a removed folder.
  private final class FolderEventWatch: Sendable {
    let folder: String
    let onChange: @Sendable () -> Void
    /// Dispatch sources are thread-safe, but Xcode 16's SDK does not declare `DispatchSourceFileSystemObject`
    /// `Sendable`: a bare source can be neither kept in a ``Locked`` (its state is `Sendable`) nor handed out of it
    /// as a `sending` result, and storing one captured into `inout sending` state is rejected by Swift 6.0-6.3
    /// (swiftlang/swift#77199). Wrapped, it is all three.
    private struct SendableSource: @unchecked Sendable {
      let source: any DispatchSourceFileSystemObject
    }
    private let current = Locked<(source: SendableSource?, ended: Bool)>((nil, false))

    init(folder: String, onChange: @escaping @Sendable () -> Void) {
      self.folder = folder
      self.onChange = onChange
    }

    deinit { cancel() }

    /// Opens the folder and starts its source; false when it cannot be opened.
    func arm() -> Bool {
      let descriptor = open(folder, O_EVTONLY | O_CLOEXEC)
      guard descriptor >= 0 else { return false }
      let source = DispatchSource.makeFileSystemObjectSource(
        fileDescriptor: descriptor, eventMask: [.write, .delete, .rename, .revoke], queue: .global())
      source.setEventHandler { [weak self, weak source] in
        guard let self, let source else { return }
        if !source.data.isDisjoint(with: [.delete, .rename, .revoke]) {
          source.cancel()
          self.retry()
        }
        self.onChange()
      }
      // The descriptor is closed once the source is cancelled, never before (Dispatch's rule for every source).
      source.setCancelHandler { close(descriptor) }
      // Wrapped before the lock (swiftlang/swift#77199: see ``SendableSource``).
      let wrapped = SendableSource(source: source)
      let kept = current.withLock { state -> Bool in
        guard !state.ended else { return false }
        state.source = wrapped
        return true
      }
      source.activate()
      if !kept { source.cancel() }
      return true
    }

    private func retry() {
      DispatchQueue.global().asyncAfter(deadline: .now() + .milliseconds(50)) { [weak self] in
        guard let self, !self.current.withLock({ $0.ended }) else { return }
        if self.arm() { self.onChange() } else { self.retry() }
      }
    }

    func cancel() {
      let wrapped = current.withLock { state -> SendableSource? in
        state.ended = true
        defer { state.source = nil }
        return state.source
      }
      wrapped?.source.cancel()
    }
  }
#endif
