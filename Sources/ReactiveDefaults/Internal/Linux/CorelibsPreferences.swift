// Internal/Linux: what the library runs on Linux only: corelibs' preferences functions (CorelibsPreferences), a
// suite's FileRecord over corelibs' copy (SuiteFileRecord and its saving and merging), a suite's save as steps
// (SuiteSave, SuitePersistence+SuiteSave), the persistence of a suite's plist (SuitePersistence+Corelibs) and the
// inotify folder watch (FolderWatcher). Every file is inside `#if os(Linux)` except SuiteFileRecord's, SuiteSave's
// and the SuitePersistence extensions, which only Linux code runs but every platform compiles (the file seam's tests
// run them on macOS too).

#if os(Linux)
  import Foundation
  import Glibc

  /// corelibs' `CFPreferencesSynchronize`, which saves one preferences domain, where `UserDefaults.synchronize()`
  /// (`CFPreferencesAppSynchronize`) saves every domain of the process.
  ///
  /// Looked up in the loaded Foundation rather than imported: importing CoreFoundation makes the C `stat` type
  /// resolve through other modules in whole-module builds, which `MemberImportVisibility` then refuses.
  enum CorelibsPreferences {
    typealias Synchronize = @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?) -> UInt8
    typealias CopyValue =
      @convention(c) (
        UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?
      ) -> UnsafeMutableRawPointer?

    typealias SetDomainValue =
      @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?) ->
      Void
    typealias SetValue = @convention(c) (UnsafeRawPointer?, UnsafeRawPointer?, UnsafeRawPointer?) -> Void
    typealias CreateString =
      @convention(c) (UnsafeRawPointer?, UnsafePointer<UInt8>?, Int, UInt32, UInt8) -> UnsafeMutableRawPointer?
    typealias CreatePropertyList =
      @convention(c) (
        UnsafeRawPointer?, UnsafeRawPointer?, UInt, UnsafeMutableRawPointer?, UnsafeMutableRawPointer?
      ) -> UnsafeMutableRawPointer?

    typealias TypeOf = @convention(c) (UnsafeRawPointer?) -> UInt
    typealias TypeID = @convention(c) () -> UInt
    typealias Count = @convention(c) (UnsafeRawPointer?) -> Int
    typealias KeysAndValues =
      @convention(c) (
        UnsafeRawPointer?, UnsafeMutablePointer<UnsafeRawPointer?>?, UnsafeMutablePointer<UnsafeRawPointer?>?
      ) -> Void
    typealias ValueAtIndex = @convention(c) (UnsafeRawPointer?, Int) -> UnsafeRawPointer?

    /// CoreFoundation's functions for reading its dictionaries and arrays as they are.
    struct Collections: @unchecked Sendable {  // immutable pointers to CoreFoundation's functions
      let typeOf: TypeOf
      let dictionaryType: UInt
      let arrayType: UInt
      let dictionaryCount: Count
      let keysAndValues: KeysAndValues
      let arrayCount: Count
      let valueAtIndex: ValueAtIndex
    }

    static let collections: Collections? = {
      guard let typeOf = dlsym(nil, "CFGetTypeID"), let dictionaryType = dlsym(nil, "CFDictionaryGetTypeID"),
        let arrayType = dlsym(nil, "CFArrayGetTypeID"), let dictionaryCount = dlsym(nil, "CFDictionaryGetCount"),
        let keysAndValues = dlsym(nil, "CFDictionaryGetKeysAndValues"), let arrayCount = dlsym(nil, "CFArrayGetCount"),
        let valueAtIndex = dlsym(nil, "CFArrayGetValueAtIndex")
      else { return nil }
      return Collections(
        typeOf: unsafeBitCast(typeOf, to: TypeOf.self),
        dictionaryType: unsafeBitCast(dictionaryType, to: TypeID.self)(),
        arrayType: unsafeBitCast(arrayType, to: TypeID.self)(),
        dictionaryCount: unsafeBitCast(dictionaryCount, to: Count.self),
        keysAndValues: unsafeBitCast(keysAndValues, to: KeysAndValues.self),
        arrayCount: unsafeBitCast(arrayCount, to: Count.self),
        valueAtIndex: unsafeBitCast(valueAtIndex, to: ValueAtIndex.self))
    }()

    /// A dictionary or array CoreFoundation made or holds, as a property-list value, read through CoreFoundation at
    /// every level: corelibs' `NSDictionary` hands out nested dictionaries cast to `[String: Any]`, which merges keys
    /// that differ only by Unicode normalization. nil for anything that is not a property-list value; scalars are
    /// left to ``PropertyListValue/init(foundationObject:)`` (nil here too: call it only for collections).
    static func collectionValue(of object: AnyObject) -> PropertyListValue? {
      guard let collections else { return nil }
      return withExtendedLifetime(object) { () -> PropertyListValue? in
        let pointer = UnsafeRawPointer(Unmanaged.passUnretained(object).toOpaque())
        func element(_ raw: UnsafeRawPointer?) -> PropertyListValue? {
          guard let raw else { return nil }
          let item = Unmanaged<AnyObject>.fromOpaque(raw).takeUnretainedValue()
          let type = collections.typeOf(raw)
          if type == collections.dictionaryType || type == collections.arrayType { return collectionValue(of: item) }
          return PropertyListValue(foundationObject: item)
        }
        let type = collections.typeOf(pointer)
        if type == collections.dictionaryType {
          let count = collections.dictionaryCount(pointer)
          var keys = [UnsafeRawPointer?](repeating: nil, count: count)
          var values = [UnsafeRawPointer?](repeating: nil, count: count)
          collections.keysAndValues(pointer, &keys, &values)
          var entries: [PropertyListKey: PropertyListValue] = [:]
          entries.reserveCapacity(count)
          for index in 0..<count {
            guard let key = keys[index],
              let name = Unmanaged<AnyObject>.fromOpaque(key).takeUnretainedValue() as? String,
              let value = element(values[index])
            else { return nil }
            entries[PropertyListKey(name)] = value
          }
          return .dictionary(entries)
        }
        guard type == collections.arrayType else { return nil }
        var items: [PropertyListValue] = []
        let count = collections.arrayCount(pointer)
        items.reserveCapacity(count)
        for index in 0..<count {
          guard let item = element(collections.valueAtIndex(pointer, index)) else { return nil }
          items.append(item)
        }
        return .array(items)
      }
    }

    struct Symbols: @unchecked Sendable {  // immutable pointers to CoreFoundation's functions and constants
      let synchronize: Synchronize
      let copyValue: CopyValue
      let copyMultiple: CopyValue
      let setValue: SetValue
      let setDomainValue: SetDomainValue
      let createString: CreateString
      let createPropertyList: CreatePropertyList
      let anyApplication: UnsafeRawPointer?
      let currentApplication: UnsafeRawPointer
      let currentUser: UnsafeRawPointer
      let anyHost: UnsafeRawPointer
    }

    static let symbols: Symbols? = {
      func constant(_ name: String) -> UnsafeRawPointer? {
        dlsym(nil, name).flatMap { $0.assumingMemoryBound(to: UnsafeRawPointer?.self).pointee }
      }
      guard let function = dlsym(nil, "CFPreferencesSynchronize"), let copyValue = dlsym(nil, "CFPreferencesCopyValue"),
        let copyMultiple = dlsym(nil, "CFPreferencesCopyMultiple"),
        let setValue = dlsym(nil, "CFPreferencesSetAppValue"), let setDomainValue = dlsym(nil, "CFPreferencesSetValue"),
        let createString = dlsym(nil, "CFStringCreateWithBytes"),
        let createPropertyList = dlsym(nil, "CFPropertyListCreateWithData"),
        let currentApplication = constant("kCFPreferencesCurrentApplication"),
        let currentUser = constant("kCFPreferencesCurrentUser"), let anyHost = constant("kCFPreferencesAnyHost")
      else { return nil }
      return Symbols(
        synchronize: unsafeBitCast(function, to: Synchronize.self),
        copyValue: unsafeBitCast(copyValue, to: CopyValue.self),
        copyMultiple: unsafeBitCast(copyMultiple, to: CopyValue.self),
        setValue: unsafeBitCast(setValue, to: SetValue.self),
        setDomainValue: unsafeBitCast(setDomainValue, to: SetDomainValue.self),
        createString: unsafeBitCast(createString, to: CreateString.self),
        createPropertyList: unsafeBitCast(createPropertyList, to: CreatePropertyList.self),
        anyApplication: constant("kCFPreferencesAnyApplication"),
        currentApplication: currentApplication,
        currentUser: currentUser, anyHost: anyHost)
    }()

    /// Saves the domain of the current user, any host: a suite by its name, or the application's (`nil`).
    /// Returns false when corelibs' save failed or the function is not there.
    static func synchronize(domain: String?) -> Bool {
      guard let symbols else { return false }
      guard let domain else {
        return PreferencesCalls.serialized {
          symbols.synchronize(symbols.currentApplication, symbols.currentUser, symbols.anyHost) != 0
        }
      }
      // corelibs' NSString is toll-free bridged to CFString.
      guard let name = keyString(domain) else { return false }
      return withExtendedLifetime(name) {
        PreferencesCalls.serialized {
          symbols.synchronize(Unmanaged.passUnretained(name).toOpaque(), symbols.currentUser, symbols.anyHost) != 0
        }
      }
    }

    /// The value of `key` in one domain of the current user, any host (a suite by its name, or the application's
    /// for `nil`), read from corelibs' copy of that domain alone: unlike `UserDefaults.object(forKey:)`, it does not
    /// rebuild corelibs' merged view of every domain, which a write invalidates (O(keys) per read after a write).
    /// It sees plain `UserDefaults` writes of this process. nil when the domain has no such key, or the function is
    /// not there.
    static func value(forKey key: String, domain: String?) -> Any? {
      guard let symbols, let name = keyString(key) else { return nil }
      let suite = domain.flatMap(keyString)
      return withExtendedLifetime((name, suite)) { () -> Any? in
        let application = suite.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
        guard
          let raw = PreferencesCalls.serialized({
            symbols.copyValue(
              Unmanaged.passUnretained(name).toOpaque(), application ?? symbols.currentApplication,
              symbols.currentUser, symbols.anyHost)
          })
        else { return nil }
        // CFPreferencesCopyValue follows the Create rule: the caller owns the value.
        return Unmanaged<AnyObject>.fromOpaque(raw).takeRetainedValue()
      }
    }

    /// corelibs' copy of one domain of the current user, any host (a suite by its name, or the application's for
    /// `nil`), as CoreFoundation holds it: an `NSDictionary` whose keys are read one by one
    /// (``PropertyListValue/entries(of:)``), where `persistentDomain(forName:)` casts it to `[String: Any]`, merging
    /// keys that differ only by Unicode normalization. nil when the function is not there.
    static func domain(_ domain: String?) -> NSDictionary? {
      guard let symbols else { return nil }
      let suite = domain.flatMap(keyString)
      return withExtendedLifetime(suite) { () -> NSDictionary? in
        let application = suite.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
        // With no list of keys, CFPreferencesCopyMultiple copies the whole domain (Create rule).
        guard
          let raw = PreferencesCalls.serialized({
            symbols.copyMultiple(nil, application ?? symbols.currentApplication, symbols.currentUser, symbols.anyHost)
          })
        else { return NSDictionary() }
        return Unmanaged<NSDictionary>.fromOpaque(raw).takeRetainedValue()
      }
    }

    /// Writes (or, for nil, removes) `key` in one domain of the current user, any host, as corelibs'
    /// `UserDefaults.set(_:forKey:)` does, but with the key as a CoreFoundation string where it must be
    /// (``needsExactString(_:)``). A suite's domain is written through `CFPreferencesSetValue`, which finds it by
    /// the exact name; `UserDefaults.set` goes through corelibs' cache of applications, whose names it compares as
    /// Swift strings (so a suite named with one spelling of `café` could write into the other's). False when the
    /// functions are not there.
    static func set(_ value: AnyObject?, forKey key: String, domain: String?) -> Bool {
      guard let symbols, let name = keyString(key) else { return false }
      let suite = domain.flatMap(keyString)
      withExtendedLifetime((name, suite, value)) {
        let object = value.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
        PreferencesCalls.serialized {
          if let suite {
            symbols.setDomainValue(
              Unmanaged.passUnretained(name).toOpaque(), object, Unmanaged.passUnretained(suite).toOpaque(),
              symbols.currentUser, symbols.anyHost)
          } else {
            symbols.setValue(Unmanaged.passUnretained(name).toOpaque(), object, symbols.currentApplication)
          }
        }
      }
      return true
    }

    /// Writes (or, for nil, removes) `key` as corelibs' `UserDefaults.set(_:forKey:)` does once it has checked the
    /// value (`CFPreferencesSetAppValue`, through corelibs' cache of applications, so that its merged views see the
    /// write at once), with `value` already an object CoreFoundation holds (``PropertyListValue/corelibsObject``).
    /// `UserDefaults.set` checks a value by bridging it to Swift, byte by byte for data: seconds for a few MiB, all of
    /// it inside the library's turn at corelibs (``PreferencesCalls``), which every other suite's reads then waited
    /// for. False when the function is not there (the caller writes through `UserDefaults`).
    static func setAppValue(_ value: AnyObject?, forKey key: String, application: String?) -> Bool {
      guard let symbols, let name = keyString(key) else { return false }
      let suite = application.flatMap(keyString)
      guard application == nil || suite != nil else { return false }
      withExtendedLifetime((name, suite, value)) {
        let object = value.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
        let target = suite.map { UnsafeRawPointer(Unmanaged.passUnretained($0).toOpaque()) }
        PreferencesCalls.serialized {
          symbols.setValue(Unmanaged.passUnretained(name).toOpaque(), object, target ?? symbols.currentApplication)
        }
      }
      return true
    }

    /// The value of `key` in the global domain of the current user, any host (`NSGlobalDomain`, which
    /// `UserDefaults.object(forKey:)` consults after the suite's own), with the key as a string CoreFoundation
    /// compares exactly where it must. nil when absent.
    static func globalValue(forKey key: String) -> Any? {
      guard let symbols, let anyApplication = symbols.anyApplication, let name = keyString(key) else { return nil }
      return withExtendedLifetime(name) { () -> Any? in
        guard
          let raw = PreferencesCalls.serialized({
            symbols.copyValue(
              Unmanaged.passUnretained(name).toOpaque(), anyApplication, symbols.currentUser, symbols.anyHost)
          })
        else { return nil }
        return Unmanaged<AnyObject>.fromOpaque(raw).takeRetainedValue()
      }
    }

    /// Whether a key must reach CoreFoundation as a string it made (``exactString(_:)``): a key with a character
    /// outside ASCII, or with one of the three ASCII characters that another character is canonically equivalent to
    /// (`K`: the Kelvin sign U+212A; `;`: the Greek question mark U+037E; `` ` ``: U+1FEF). Any other key has no
    /// canonically equivalent spelling, so a Swift-made string compares it exactly, and faster: corelibs' merged view
    /// compares a lookup key with a CoreFoundation-made one by bridging that one to a Swift `String` first.
    static func needsExactString(_ key: String) -> Bool {
      key.utf8.contains { $0 >= 0x80 || $0 == UInt8(ascii: "K") || $0 == UInt8(ascii: ";") || $0 == UInt8(ascii: "`") }
    }

    /// The key as handed to CoreFoundation: exact where it must be (``needsExactString(_:)``), else Swift-made.
    static func keyString(_ key: String) -> NSString? {
      needsExactString(key) ? exactString(key) : NSString(string: key)
    }

    /// `text` as a string CoreFoundation made (`CFStringCreateWithBytes`), which it compares by its exact UTF-16 code
    /// units. A Swift-made `NSString` compares by Swift's canonical equivalence wherever CoreFoundation asks it: as a
    /// key of a preferences domain, "café" spelled with a combining accent would then replace, or hide, "café" with a
    /// precomposed é (its dirty-key list would even drop the second one's write from corelibs' save).
    static func exactString(_ text: String) -> NSString? {
      guard let symbols else { return nil }
      var text = text
      return text.withUTF8 { bytes -> NSString? in
        let kCFStringEncodingUTF8: UInt32 = 0x0800_0100
        guard let raw = symbols.createString(nil, bytes.baseAddress, bytes.count, kCFStringEncodingUTF8, 0) else {
          return nil
        }
        return Unmanaged<NSString>.fromOpaque(raw).takeRetainedValue()
      }
    }

    /// The property list in `data`, parsed by CoreFoundation (`CFPropertyListCreateWithData`) and returned as
    /// CoreFoundation made it: corelibs' `PropertyListSerialization` casts a dictionary to `[String: Any]`, merging
    /// keys that differ only by Unicode normalization. nil when the data is not a property list.
    static func propertyList(from data: Data) -> AnyObject? {
      guard let symbols else { return nil }
      let bytes = NSData(data: data)
      return withExtendedLifetime(bytes) { () -> AnyObject? in
        // kCFPropertyListImmutable; no format or error wanted.
        guard let raw = symbols.createPropertyList(nil, Unmanaged.passUnretained(bytes).toOpaque(), 0, nil, nil) else {
          return nil
        }
        return Unmanaged<AnyObject>.fromOpaque(raw).takeRetainedValue()
      }
    }
  }
#endif
