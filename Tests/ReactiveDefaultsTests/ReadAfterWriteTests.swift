import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

/// Right after a write, reads go to the suite's own domain (on Linux corelibs would otherwise rebuild its merged
/// view of every domain, O(keys)): they must still give what `object(forKey:)` gives.
@Suite struct ReadAfterWriteTests {
  @Test func aPlainWriteInThisProcessIsSeenRightAfterAWriteOfOurs() {
    let (store, _) = makeStore()
    let other = DefaultsKey<Int>("other", default: 0)
    for round in 1...100 {
      store[.count] = round
      store.userDefaults.set(round * 2, forKey: "other")
      #expect(store[other] == round * 2)
    }
    // And once reads run on without writes.
    for _ in 0..<128 { #expect(store[other] == 200) }
  }

  /// A launch argument overrides the suite's value, and a registered default stands in for an absent key, in
  /// direct reads as in `object(forKey:)`.
  @Test func argumentsAndRegisteredDefaultsStillApply() {
    let (store, _) = makeStore()
    let unique = "readAfterWrite.\(UUID().uuidString)"
    let (argumentName, registeredName) = (unique + ".argument", unique + ".registered")
    let overridden = DefaultsKey<String>(argumentName, default: "")
    let registered = DefaultsKey<String>(registeredName, default: "")
    store[overridden] = "stored"
    let arguments = store.userDefaults.volatileDomain(forName: UserDefaults.argumentDomain)
    store.userDefaults.setVolatileDomain(
      arguments.merging([argumentName: "argument"]) { $1 }, forName: UserDefaults.argumentDomain)
    defer { store.userDefaults.setVolatileDomain(arguments, forName: UserDefaults.argumentDomain) }
    store.userDefaults.register(defaults: [registeredName: "registered"])
    store[.count] = 1
    #expect(store[overridden] == "argument")
    #expect(store[registered] == "registered")
  }

  /// A launch argument arrives as a string (`-volume 0.9`): a numeric key reads it as its number, over the stored
  /// value, with no issue.
  @Test func aNumericLaunchArgumentOverridesANumericKey() {
    let (store, issues) = makeStore()
    let name = "readAfterWrite.\(UUID().uuidString).volume"
    let volume = DefaultsKey<Double>(name, default: 0.5)
    let count = DefaultsKey<Int>(name + ".count", default: 0)
    store[volume] = 0.1
    store[count] = 1
    let arguments = store.userDefaults.volatileDomain(forName: UserDefaults.argumentDomain)
    store.userDefaults.setVolatileDomain(
      arguments.merging([name: "0.9", name + ".count": "5"]) { $1 }, forName: UserDefaults.argumentDomain)
    defer { store.userDefaults.setVolatileDomain(arguments, forName: UserDefaults.argumentDomain) }
    #expect(store[volume] == 0.9)
    #expect(store[count] == 5)
    #expect(issues.values.isEmpty)
  }

  /// Values read straight from the domain decode as the same types: numbers, Booleans, collections, dates, data.
  @Test func directReadsDecodeEveryKind() {
    let (store, issues) = makeStore()
    let flag = DefaultsKey<Bool>("flagKey", default: false)
    let list = DefaultsKey<[String]>("list", default: [])
    let when = DefaultsKey<Date?>("when")
    let blob = DefaultsKey<Data>("blob", default: Data())
    let nested = DefaultsKey<[String: [Int]]>("nested", default: [:])
    store[flag] = true
    store[list] = ["a", "b"]
    store[when] = Date(timeIntervalSince1970: 1_000)
    store[blob] = Data([1, 2, 3])
    store[nested] = ["x": [1, 2]]
    store[.volume] = 0.25
    store.flush()
    store[.count] = 7
    #expect(store[flag] == true)
    #expect(store[list] == ["a", "b"])
    #expect(store[when] == Date(timeIntervalSince1970: 1_000))
    #expect(store[blob] == Data([1, 2, 3]))
    #expect(store[nested] == ["x": [1, 2]])
    #expect(store[.volume] == 0.25)
    #expect(store[.count] == 7)
    #expect(issues.values.isEmpty)
  }
}
