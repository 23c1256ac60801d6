#if canImport(Darwin)
  import Foundation

  /// The one key-value observer of a suite's `UserDefaults` on Apple platforms. Apple documents key-value observing,
  /// not `didChangeNotification`, as the way to learn of changes made by other processes (widgets, app extensions,
  /// `defaults write`). Which keys are registered is decided by the platform-neutral ``KeyRegistrations``.
  final class DefaultsKeyValueObserver: NSObject, @unchecked Sendable {  // immutable after init
    private let defaults: UserDefaults
    private let onChange: @Sendable (String) -> Void
    /// Marks this library's registrations, so that other observations of the instance are passed on: an address
    /// of its own, stable for the life of the process.
    nonisolated(unsafe) private static let context = UnsafeMutableRawPointer.allocate(byteCount: 1, alignment: 1)

    init(_ defaults: UserDefaults, onChange: @escaping @Sendable (String) -> Void) {
      self.defaults = defaults
      self.onChange = onChange
      super.init()
    }

    func register(_ key: String) {
      defaults.addObserver(self, forKeyPath: key, options: [.new], context: Self.context)
    }

    func unregister(_ key: String) {
      defaults.removeObserver(self, forKeyPath: key, context: Self.context)
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
