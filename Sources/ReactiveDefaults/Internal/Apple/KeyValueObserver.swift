#if canImport(Darwin)
  import CoreFoundation
  import Foundation

  /// The two calls into Apple's preferences that `UserDefaults`' Swift interface cannot make as the library needs.
  enum ApplePreferences {
    /// The suite's own domain as Foundation holds it. `persistentDomain(forName:)` is declared to return
    /// `[String: Any]?`, and bridging to a Swift dictionary merges keys that differ only by Unicode normalization
    /// (Swift compares strings by canonical equivalence), keeping one: the same message is sent, and its
    /// `NSDictionary` taken as it is. (The method returns an autoreleased object: unretained.)
    static func persistentDomain(of defaults: UserDefaults, name: String) -> NSDictionary {
      let selector = #selector(UserDefaults.persistentDomain(forName:))
      let result = defaults.perform(selector, with: name as NSString)?.takeUnretainedValue()
      return result as? NSDictionary ?? NSDictionary()
    }

    /// Has the preferences daemon store what this process wrote to the domain (`nil`: the application's own), as
    /// Foundation's header asks of a process that is not an app before it exits:
    /// `CFPreferencesAppSynchronize`, which acts on the same search lists as `UserDefaults` (app groups included).
    /// False when it failed.
    static func synchronize(_ name: String?) -> Bool {
      // Typed: older SDKs declare the constant `CFString!`, newer ones `CFString`.
      let application: CFString = kCFPreferencesCurrentApplication
      return CFPreferencesAppSynchronize(name.map { $0 as CFString } ?? application)
    }
  }

  /// The one key-value observer of a suite's `UserDefaults` on Apple platforms. Apple documents key-value observing,
  /// not `didChangeNotification`, as the way to learn of changes made by other processes (widgets, app extensions,
  /// `defaults write`). Which keys are registered is decided by the platform-neutral ``KeyRegistrations``.
  final class DefaultsKeyValueObserver: NSObject, @unchecked Sendable {  // immutable after init (`defaults` zeroed)
    /// Weakly: a storage that lets its instance go (RxCocoa's `UserDefaults.rx`) must not be kept alive through its
    /// observer; a storage that keeps its instance holds it itself.
    private weak var defaults: UserDefaults?
    private let onChange: @Sendable (String) -> Void
    /// Marks this library's registrations, so that other observations of the instance are passed on: an address
    /// of its own, stable for the life of the process.
    nonisolated(unsafe) private static let context = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    init(_ defaults: UserDefaults, onChange: @escaping @Sendable (String) -> Void) {
      self.defaults = defaults
      self.onChange = onChange
      super.init()
    }

    /// The keys this observer added (each while it held the instance, so that a deallocation cannot begin in
    /// between): exactly those are removed when the instance goes away. By exact characters, as key-value observing
    /// compares key paths (a `Set<String>` would take two spellings of `café` for one key).
    private let added = Locked<Set<PropertyListKey>>([])

    func register(_ key: String) {
      guard let defaults else { return }
      withExtendedLifetime(defaults) {
        defaults.addObserver(self, forKeyPath: key, options: [.new], context: Self.context)
        added.withLock { _ = $0.insert(PropertyListKey(key)) }
      }
    }

    func unregister(_ key: String) {
      guard let defaults else { return }
      withExtendedLifetime(defaults) {
        guard added.withLock({ $0.remove(PropertyListKey(key)) }) != nil else { return }
        defaults.removeObserver(self, forKeyPath: key, context: Self.context)
      }
    }

    /// Removes this observer from `instance` for every key it added: the instance is being deallocated (inside its
    /// `dealloc`, where weak references to it read nil already, so the caller hands it over).
    func removeAll(from instance: UserDefaults) {
      let keys = added.withLock { keys in
        defer { keys = [] }
        return keys
      }
      for key in keys { instance.removeObserver(self, forKeyPath: key.string, context: Self.context) }
    }

    override func observeValue(
      forKeyPath keyPath: String?, of object: Any?, change: [NSKeyValueChangeKey: Any]?,
      context: UnsafeMutableRawPointer?
    ) {
      guard context == Self.context, let keyPath else {
        return super.observeValue(forKeyPath: keyPath, of: object, change: change, context: context)
      }
      onChange(keyPath)
    }
  }

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
