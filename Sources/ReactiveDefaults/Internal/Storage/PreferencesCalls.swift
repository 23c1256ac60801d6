/// The one door of this library's calls into corelibs' preferences (`UserDefaults` reads and writes of a suite,
/// `CFPreferences…`): on Linux they go through it one at a time, process-wide; elsewhere it only runs the call.
///
/// corelibs names every preferences domain it caches by the user's name, which it takes from `getpwuid` at each call
/// (`_CFPreferencesCreateCachePrefixForUserHost` → `CFCopyUserName`). `getpwuid` fills one static buffer, which a call
/// on another thread rewrites meanwhile; a name read half rewritten names another domain, which corelibs then loads
/// from the file and keeps: a read there misses this process's unsaved writes and later changes, a drop of the copy
/// drops the wrong one. Measured with three other threads using other stores of the library: 1 to 7 of 20,000
/// write-then-read rounds read an old value, and a reload could leave an observer with the value from before another
/// process's save. Taking turns, the library's threads never race each other there. (Other code of the process that
/// calls `getpwuid` still can: reads of this process's own unsaved writes do not ask corelibs at all, see
/// ``UserDefaultsStorage``.)
///
/// The lock is a ``Locked`` state lock: held only around one corelibs call, which runs no code of the library's or the
/// app's (no notification is posted by the calls made through it).
enum PreferencesCalls {
  #if os(Linux)
    private static let turn = Locked(())
  #endif

  /// Runs `body`, a call into corelibs' preferences, while no other thread of the library makes one.
  @inline(__always)
  static func serialized<T>(_ body: () -> T) -> T {
    #if os(Linux)
      var result: T?
      turn.withLock { _ in result = body() }
      return result!
    #else
      body()
    #endif
  }
}
