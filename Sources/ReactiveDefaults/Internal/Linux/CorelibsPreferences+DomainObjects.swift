// The object corelibs keeps for one suite's preferences domain, found once through a search list and read directly
// (CorelibsPreferences' domain-object part).

#if os(Linux)
  import Foundation
  import Glibc

  extension CorelibsPreferences {
    /// What finds the object corelibs keeps for one domain, and reads it (``domainObject(_:)``): functions corelibs
    /// exports for Foundation (`ForFoundationOnly.h`, whose `_CFApplicationPreferences` struct begins with its search
    /// list).
    private struct DomainObjects: @unchecked Sendable {  // immutable pointers to CoreFoundation's functions
      typealias CreateType = @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?) -> UnsafeMutableRawPointer?
      typealias CallType = @convention(c) (UnsafeMutableRawPointer?) -> Void
      typealias ValueType = @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?) -> UnsafeMutableRawPointer?
      typealias RetainType = @convention(c) (UnsafeRawPointer?) -> UnsafeRawPointer?
      let createApplicationPreferences: CreateType
      let setStandardSearchList: CallType
      let deallocateApplicationPreferences: CallType
      let value: ValueType
      let retain: RetainType
    }

    private static let domainObjects: DomainObjects? = {
      guard let create = dlsym(nil, "_CFApplicationPreferencesCreateWithUser"),
        let searchList = dlsym(nil, "_CFApplicationPreferencesSetStandardSearchList"),
        let deallocate = dlsym(nil, "_CFDeallocateApplicationPreferences"),
        let value = dlsym(nil, "_CFPreferencesDomainCreateValueForKey"), let retain = dlsym(nil, "CFRetain")
      else { return nil }
      return DomainObjects(
        createApplicationPreferences: unsafeBitCast(create, to: DomainObjects.CreateType.self),
        setStandardSearchList: unsafeBitCast(searchList, to: DomainObjects.CallType.self),
        deallocateApplicationPreferences: unsafeBitCast(deallocate, to: DomainObjects.CallType.self),
        value: unsafeBitCast(value, to: DomainObjects.ValueType.self),
        retain: unsafeBitCast(retain, to: DomainObjects.RetainType.self))
    }()

    /// The object corelibs serves one domain of the current user, any host, from (a suite by its name, or the
    /// application's for nil): the one `UserDefaults` reads through its search list and, but for the race below,
    /// writes into. nil when it cannot be found.
    ///
    /// corelibs finds a domain's object by a name it builds from the user's name at each call, which it takes from
    /// `getpwuid`'s one static buffer: while another thread of the process calls `getpwuid` (the app's, a logging
    /// library's, corelibs' own), the name can come out garbled, and that call reads or writes another object, loaded
    /// from the file (without this process's unsaved writes). Read through this object, a read never goes astray; it
    /// is found through a search list built for the purpose (as `UserDefaults` builds its own, once), three times in
    /// agreement (a garbled look-up would give another object), and kept (corelibs keeps it too, for the process's
    /// life, unless the app calls `CFPreferencesFlushCaches`).
    static func domainObject(_ domain: String?) -> UnsafeRawPointer? {
      guard let symbols, let objects = domainObjects, let collections else { return nil }
      let suite = domain.flatMap(keyString)
      return withExtendedLifetime(suite) { () -> UnsafeRawPointer? in
        let application =
          suite.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
          ?? symbols.currentApplication
        func lookUp() -> UnsafeRawPointer? {
          PreferencesCalls.serialized { () -> UnsafeRawPointer? in
            guard let preferences = objects.createApplicationPreferences(symbols.currentUser, application) else {
              return nil
            }
            defer { objects.deallocateApplicationPreferences(preferences) }
            objects.setStandardSearchList(preferences)
            // this app, this user, this host; this app, this user, any host (the one); then six more.
            guard let search = preferences.load(as: UnsafeRawPointer?.self),
              collections.typeOf(search) == collections.arrayType, collections.arrayCount(search) == 8
            else { return nil }
            return collections.valueAtIndex(search, 1)
          }
        }
        for _ in 0..<20 {
          guard let first = lookUp() else { return nil }
          if lookUp() == first && lookUp() == first {
            _ = objects.retain(first)
            return first
          }
        }
        return nil
      }
    }

    /// The value of `key` in the domain object `object` (``domainObject(_:)``); nil when absent.
    ///
    /// Not one of the library's turns at corelibs (``PreferencesCalls``): the call names no domain, so it never asks
    /// `getpwuid` for the user's name, and corelibs reads the object's dictionary under the object's own lock (the
    /// lock its saves and writes take too). The turns are for calls that look a domain up by name; every read of the
    /// library's comes here, and made to wait for them, reads of every suite queued behind any slow corelibs call of
    /// another (the whole test suite ran 2.8 times slower, its threads waiting for the turn).
    static func value(forKey key: String, inDomainObject object: UnsafeRawPointer) -> Any? {
      guard let objects = domainObjects, let name = keyString(key) else { return nil }
      return withExtendedLifetime(name) { () -> Any? in
        guard let raw = objects.value(object, Unmanaged.passUnretained(name).toOpaque()) else { return nil }
        // Create rule: the caller owns the value.
        return Unmanaged<AnyObject>.fromOpaque(raw).takeRetainedValue()
      }
    }
  }
#endif
