import Foundation
import TestSupport
import Testing

@_spi(Tools) @testable import ReactiveDefaults

/// "café" with a precomposed é (U+00E9) and with `e` and a combining acute accent (U+0065 U+0301): one string to
/// Swift, two keys to CoreFoundation, Apple's format and every other tool.
let precomposed = "caf\u{E9}"
let decomposed = "cafe\u{301}"

/// A key is exactly its characters: two keys (or suite names) that differ only by Unicode normalization are two
/// keys everywhere, as they are to CoreFoundation.
@Suite struct KeyNameTests {
  @Test func theTwoSpellingsAreOneStringToSwiftAndTwoKeys() {
    #expect(precomposed == decomposed)
    #expect(PropertyListKey(precomposed) != PropertyListKey(decomposed))
    #expect(Set([PropertyListKey(precomposed), PropertyListKey(decomposed), "K", "\u{212A}"]).count == 4)
    #expect(PropertyListKey(precomposed).debugDescription == #""caf\u{E9}""#)
    // CoreFoundation's order: by UTF-16 code units (e U+0065 before é U+00E9).
    #expect(PropertyListKey(decomposed) < PropertyListKey(precomposed))
  }

  /// Keys compare by their bytes: equal lengths with one byte different anywhere, a prefix, the empty key, one string
  /// against itself, and a string whose bytes are not in memory as UTF-8 (a bridged one).
  @Test func keysCompareByEveryByte() {
    let long = String(repeating: "settings.", count: 20)
    #expect(PropertyListKey(long + "a") == PropertyListKey(String(long + "a")))
    #expect(PropertyListKey(long + "a") != PropertyListKey(long + "b"))
    #expect(PropertyListKey("b" + long) != PropertyListKey("a" + long))
    #expect(PropertyListKey(long) != PropertyListKey(long + "a"))
    #expect(PropertyListKey("") == PropertyListKey(""))
    #expect(PropertyListKey("") != PropertyListKey("a"))
    let same = PropertyListKey(long)
    #expect(same == same)
    #expect(PropertyListKey(long + precomposed) != PropertyListKey(long + decomposed))
    #expect(PropertyListKey(NSString(string: decomposed) as String) == PropertyListKey(decomposed))
    #expect(PropertyListKey(NSString(string: decomposed) as String) != PropertyListKey(precomposed))
  }

  /// Strings Foundation and CoreFoundation hold (the classes a suite's domain hands out, taken by a class cast) read
  /// as exactly their characters: Swift's bridged `NSString`, a string CoreFoundation made, a mutable one, in ASCII
  /// and in both spellings of "café".
  @Test func aStringFoundationHoldsReadsAsExactlyItsCharacters() throws {
    for text in ["plain ASCII", precomposed, decomposed, "\u{212A}", "", "a\u{0}b"] {
      var objects: [Any] = [NSString(string: text), NSMutableString(string: text)]
      #if os(Linux)
        // The class of what corelibs parses from a file.
        objects.append(try #require(CorelibsPreferences.exactString(text)))
      #endif
      for object in objects {
        let read = try #require(PropertyListValue(foundationObject: object), "\(type(of: object))")
        guard case .string(let string) = read else {
          Issue.record("\(type(of: object)) read as \(read)")
          continue
        }
        #expect(Array(string.utf8) == Array(text.utf8), "\(type(of: object)): \(string.debugDescription)")
      }
    }
  }

  /// The issue's first probe: an edit of another key keeps both spellings, each with its own value.
  @Test(.linuxOnly) func anEditKeepsBothSpellingsOfAKey() throws {
    let name = makeSuiteName()
    let path = preferencesFolder.appendingPathComponent("\(name).plist")
    try FileManager.default.createDirectory(at: preferencesFolder, withIntermediateDirectories: true)
    try handWrittenPlist([(precomposed, "NFC"), (decomposed, "NFD"), ("a", "A"), ("z0", "Z")]).write(to: path)
    defer { removeSuiteFile(name) }
    let store = try #require(DefaultsStore(suiteName: name))
    let nfc = DefaultsKey<String>(precomposed, default: "")
    let nfd = DefaultsKey<String>(decomposed, default: "")
    #expect(store[nfc] == "NFC")
    #expect(store[nfd] == "NFD")
    try store.edit { tx in tx[DefaultsKey<String>("b", default: "")] = "B" }
    let bytes = try Data(contentsOf: path)
    #expect(rawPlist(bytes, holds: precomposed, "NFC"))
    #expect(rawPlist(bytes, holds: decomposed, "NFD"))
    #expect(rawPlist(bytes, holds: "a", "A") && rawPlist(bytes, holds: "z0", "Z") && rawPlist(bytes, holds: "b", "B"))
    #expect(store.keys.count == 5)
  }

  /// Writes through the store, of either spelling, in every order: each reaches its own key in memory, in the
  /// file (corelibs' own save kept one spelling's write out of the file: its list of unsaved keys compared them as
  /// Swift strings) and for its observers only.
  @Test(arguments: Storage.allCases, [(precomposed, decomposed), ("K", "\u{212A}"), ("a;b", "a\u{37E}b")])
  func writesOfEachSpellingStayTheirs(_ storage: Storage, spellings: (String, String)) throws {
    let (store, issues) = makeStore(storage)
    let (precomposed, decomposed) = spellings
    #expect(precomposed == decomposed)  // to Swift
    let nfc = DefaultsKey<String>(precomposed, default: "")
    let nfd = DefaultsKey<String>(decomposed, default: "")
    let seenNFC = Recorder<String>()
    let seenNFD = Recorder<String>()
    let tokens = [
      store.property(nfc).observe { seenNFC.append($0) }, store.property(nfd).observe { seenNFD.append($0) },
    ]
    store[nfc] = "one"
    store[nfd] = "two"
    store[nfc] = "three"
    #expect(store[nfc] == "three")
    #expect(store[nfd] == "two")
    // Far from the writes too: corelibs' merged view of every domain, which reads use once writes are past.
    for _ in 0..<200 { _ = store[.count] }
    #expect(store[nfc] == "three")
    #expect(store[nfd] == "two")
    #expect(seenNFC.values == ["", "one", "three"])
    #expect(seenNFD.values == ["", "two"])
    #expect(Set(store.keys) == [precomposed, decomposed] && store.keys.count == 2)
    if storage == .suite, isLinux {
      try store.save()
      let bytes = try #require(suiteFileBytes(store.suiteName!))
      #expect(rawPlist(bytes, holds: precomposed, "three"))
      #expect(rawPlist(bytes, holds: decomposed, "two"))
    }
    store.reset(nfd)
    #expect(store[nfc] == "three")
    #expect(store[nfd] == "")
    #expect(issues.values.isEmpty)
    withExtendedLifetime(tokens) {}
  }

  /// A value holding a dictionary with both spellings keeps both, in memory and in the file.
  @Test(.linuxOnly) func aDictionaryValueKeepsBothSpellings() throws {
    let (store, _) = makeStore()
    let key = DefaultsKey<PropertyListValue?>("nested")
    let value = PropertyListValue.dictionary([
      PropertyListKey(precomposed): .string("NFC"), PropertyListKey(decomposed): .string("NFD"),
    ])
    store[key] = value
    try store.save()
    #expect(store.storedEntries[PropertyListKey("nested")] == value)
    let bytes = try #require(suiteFileBytes(store.suiteName!))
    let text = String(decoding: bytes, as: UTF8.self)
    #expect(text.contains("\t\t<key>\(precomposed)</key>\n\t\t<string>NFC</string>"))
    #expect(text.contains("\t\t<key>\(decomposed)</key>\n\t\t<string>NFD</string>"))
  }

  /// An edit and a migration address each spelling alone: a rename of one leaves the other.
  @Test(arguments: Storage.allCases) func aRenameOfOneSpellingLeavesTheOther(_ storage: Storage) throws {
    let (store, _) = makeStore(storage)
    store[DefaultsKey<String>(precomposed, default: "")] = "NFC"
    store[DefaultsKey<String>(decomposed, default: "")] = "NFD"
    let target = DefaultsKey<String>("name", default: "")
    try store.migrate([.rename(decomposed, to: target)])
    #expect(store[target] == "NFD")
    #expect(store[DefaultsKey<String>(precomposed, default: "")] == "NFC")
    #expect(store.keys.sorted() == ["caf\u{E9}", "name"].sorted())
    // One spelling renamed to the other is a rename, not "a key renamed to itself".
    let back = DefaultsKey<String>(decomposed, default: "")
    try store.migrate([.rename(precomposed, to: back)])
    #expect(store[back] == "NFC")
    #expect(store.keys.sorted() == [decomposed, "name"].sorted())
  }

  /// Two suite names that differ only by normalization are two suites: two hubs, two files.
  @Test(.linuxOnly) func twoSpellingsOfASuiteNameAreTwoSuites() throws {
    let base = makeSuiteName()
    let first = try #require(DefaultsStore(suiteName: base + ".\(precomposed)"))
    let second = try #require(DefaultsStore(suiteName: base + ".\(decomposed)"))
    #expect(first.hub !== second.hub)
    first[.count] = 1
    second[.count] = 2
    #expect(first[.count] == 1)
    #expect(second[.count] == 2)
    try first.save()
    try second.save()
    defer {
      removeSuiteFile(first.suiteName!)
      removeSuiteFile(second.suiteName!)
    }
    let names = try FileManager.default.contentsOfDirectory(atPath: preferencesFolder.path).filter {
      $0.hasPrefix(base)
    }
    #expect(Set(names.map { PropertyListKey($0) }).count == 4, "\(names)")  // two plists, two lock files
  }

  /// In the Apple mode of the memory store: each spelling is registered for key-value observing, and a foreign
  /// write of one reaches its observers only.
  @Test func eachSpellingIsRegisteredAndReportedOnItsOwn() async {
    let storage = MemoryStorage(behavior: .init(reportsKeyChanges: true))
    let store = DefaultsStore(hub: ChangeHub(storage: storage, suiteName: nil, suiteIsKnown: true))
    let seenNFC = Recorder<String>()
    let seenNFD = Recorder<String>()
    let tokens = [
      store.property(DefaultsKey<String>(precomposed, default: "")).observe { seenNFC.append($0) },
      store.property(DefaultsKey<String>(decomposed, default: "")).observe { seenNFD.append($0) },
    ]
    #expect(storage.registrations.registeredKeys == [PropertyListKey(precomposed), PropertyListKey(decomposed)])
    storage.writeFromOutside(.string("outside"), forKey: decomposed)
    #expect(await seenNFD.wait { $0.last == "outside" })
    #expect(seenNFC.values == [""])
    withExtendedLifetime(tokens) {}
  }

  /// The in-memory store, given both spellings, keeps both.
  @Test func anInMemoryStoreKeepsBothSpellings() {
    let store = DefaultsStore.inMemory([
      PropertyListKey(precomposed): .string("NFC"), PropertyListKey(decomposed): .string("NFD"),
    ])
    #expect(store[DefaultsKey<String>(precomposed, default: "")] == "NFC")
    #expect(store[DefaultsKey<String>(decomposed, default: "")] == "NFD")
    #expect(store.keys.count == 2)
  }

  /// A file of both spellings parses as two keys, XML (CoreFoundation's parser, read key by key) and binary (the
  /// library's reader); nested dictionaries too, and the library writes them back as two.
  @Test func parsingKeepsBothSpellingsAtEveryLevel() throws {
    let xml = handWrittenPlist([(precomposed, "NFC"), (decomposed, "NFD")])
    let parsed = try SuiteFile.parseDomain(xml)
    #expect(parsed == [PropertyListKey(precomposed): .string("NFC"), PropertyListKey(decomposed): .string("NFD")])
    let nested: [PropertyListKey: PropertyListValue] = ["outer": .dictionary(parsed)]
    let encoded = SuiteFile.encode(nested)
    #expect(try SuiteFile.parseDomain(encoded) == nested)
    #expect(rawPlist(encoded, holds: decomposed, "NFD") == false)  // nested: one tab deeper
    #expect(String(decoding: encoded, as: UTF8.self).contains("\t\t<key>\(decomposed)</key>\n\t\t<string>NFD</string>"))
  }
}
