#if os(Linux)
  import Foundation
  import Glibc

  /// corelibs' `CFPreferencesSynchronize`, which saves one preferences domain, where `UserDefaults.synchronize()`
  /// (`CFPreferencesAppSynchronize`) saves every domain of the process.
  ///
  /// Looked up in the loaded Foundation rather than imported: importing CoreFoundation makes the C `stat` type
  /// resolve through other modules in whole-module builds, which `MemberImportVisibility` then refuses.
  enum CorelibsPreferences {
    private typealias Synchronize = @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?) -> UInt8
    private typealias CopyValue =
      @convention(c) (
        UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?
      ) -> UnsafeMutableRawPointer?

    private struct Symbols: @unchecked Sendable {  // immutable pointers to CoreFoundation's constants
      let synchronize: Synchronize
      let copyValue: CopyValue
      let currentApplication: UnsafeRawPointer
      let currentUser: UnsafeRawPointer
      let anyHost: UnsafeRawPointer
    }

    private static let symbols: Symbols? = {
      func constant(_ name: String) -> UnsafeRawPointer? {
        dlsym(nil, name).flatMap { $0.assumingMemoryBound(to: UnsafeRawPointer?.self).pointee }
      }
      guard let function = dlsym(nil, "CFPreferencesSynchronize"), let copyValue = dlsym(nil, "CFPreferencesCopyValue"),
        let currentApplication = constant("kCFPreferencesCurrentApplication"),
        let currentUser = constant("kCFPreferencesCurrentUser"), let anyHost = constant("kCFPreferencesAnyHost")
      else { return nil }
      return Symbols(
        synchronize: unsafeBitCast(function, to: Synchronize.self),
        copyValue: unsafeBitCast(copyValue, to: CopyValue.self), currentApplication: currentApplication,
        currentUser: currentUser, anyHost: anyHost)
    }()

    /// Saves the domain of the current user, any host: a suite by its name, or the application's (`nil`).
    /// Returns false when corelibs' save failed or the function is not there.
    static func synchronize(domain: String?) -> Bool {
      guard let symbols else { return false }
      guard let domain else {
        return symbols.synchronize(symbols.currentApplication, symbols.currentUser, symbols.anyHost) != 0
      }
      // corelibs' NSString is toll-free bridged to CFString.
      let name = NSString(string: domain)
      return withExtendedLifetime(name) {
        symbols.synchronize(Unmanaged.passUnretained(name).toOpaque(), symbols.currentUser, symbols.anyHost) != 0
      }
    }

    /// The value of `key` in one domain of the current user, any host (a suite by its name, or the application's
    /// for `nil`), read from corelibs' copy of that domain alone: unlike `UserDefaults.object(forKey:)`, it does not
    /// rebuild corelibs' merged view of every domain, which a write invalidates (O(keys) per read after a write).
    /// It sees plain `UserDefaults` writes of this process. nil when the domain has no such key, or the function is
    /// not there.
    static func value(forKey key: String, domain: String?) -> Any? {
      guard let symbols else { return nil }
      let name = NSString(string: key)
      let suite = domain.map(NSString.init(string:))
      return withExtendedLifetime((name, suite)) { () -> Any? in
        let application = suite.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
        guard
          let raw = symbols.copyValue(
            Unmanaged.passUnretained(name).toOpaque(), application ?? symbols.currentApplication, symbols.currentUser,
            symbols.anyHost)
        else { return nil }
        // CFPreferencesCopyValue follows the Create rule: the caller owns the value.
        return Unmanaged<AnyObject>.fromOpaque(raw).takeRetainedValue()
      }
    }
  }
#endif
