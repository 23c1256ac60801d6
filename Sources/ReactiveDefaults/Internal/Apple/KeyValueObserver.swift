#if canImport(Darwin)
  import CoreFoundation
  import Foundation

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
#endif
