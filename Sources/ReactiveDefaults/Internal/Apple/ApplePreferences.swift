// Internal/Apple: Apple platforms only. Every file here is inside `#if canImport(Darwin)`: Linux never compiles it
// (`.ci/run` does not either; the GitHub workflow builds and tests it on macOS and iOS). It holds the key-value
// observer of a suite (KeyValueObserver), the file stores' folder watch (FolderEvents), the two calls into Apple's
// preferences that `UserDefaults`' Swift interface cannot make (ApplePreferences), and remembered documents' bookmarks
// and security scopes (SecurityScopedBookmarks). Check each Apple call against Apple's documentation before changing
// it.

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
#endif
