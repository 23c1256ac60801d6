import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

@Suite struct StorePairingTests {
  /// A store by name and a store over an instance of the same suite, made in either order, share one hub: each sees
  /// the other's writes at once, in process.
  @Test(arguments: [false, true])
  func aNamedStoreAndAStoreOverAnInstanceShareChanges(instanceFirst: Bool) {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let instance = UserDefaults(suiteName: name)!
    let (byName, overInstance) =
      instanceFirst
      ? {
        let over = DefaultsStore(instance); return (DefaultsStore(suiteName: name)!, over)
      }()
      : {
        let named = DefaultsStore(suiteName: name)!; return (named, DefaultsStore(instance))
      }()
    #if os(Linux)
      // corelibs' `UserDefaults` keeps its suite's name where the library can read it.
      #expect(byName.hub === overInstance.hub)
      #expect(overInstance.suiteName == name)
    #else
      // Apple platforms: an instance does not say its suite, so its store has a hub of its own, which re-checks
      // each key other hubs write (the values below hold the same).
      #expect(byName.hub !== overInstance.hub)
      #expect(overInstance.suiteName == nil)
    #endif
    let seenByName = Recorder<Int>()
    let seenOverInstance = Recorder<Int>()
    let tokens = [
      byName.property(.count).observe { seenByName.append($0) },
      overInstance.property(.count).observe { seenOverInstance.append($0) },
    ]
    overInstance[.count] = 1
    byName[.count] = 2
    #expect(seenByName.values == [0, 1, 2])
    #expect(seenOverInstance.values == [0, 1, 2])
    withExtendedLifetime(tokens) {}
  }

  @Test func theStandardStoreAndStoresOverStandardInstancesShareOneHub() {
    #expect(DefaultsStore(UserDefaults.standard).hub === DefaultsStore.standard.hub)
    #if os(Linux)
      // A `UserDefaults()` has no suite: it is the application's own domain, as `.standard` is.
      #expect(DefaultsStore(UserDefaults()).hub === DefaultsStore.standard.hub)
    #endif
  }

  /// The standard store knows its domain (the app's bundle identifier on Apple platforms, the executable's name on
  /// Linux), so `keys` lists what it holds and `removeAll()` would reach it.
  @Test func theStandardStoreListsItsKeys() {
    let name = "standard.\(UUID().uuidString)"
    let key = DefaultsKey<Int>(name, default: 0)
    DefaultsStore.standard[key] = 7
    defer { DefaultsStore.standard.reset(key) }
    #expect(DefaultsStore.standard.keys.contains(name))
    #expect(DefaultsStore.standard.hub.suiteIsKnown)
  }

  /// Where the suite of an instance cannot be told (Apple platforms), its hub re-checks each key other hubs write.
  @Test func aHubWhoseSuiteIsUnknownSeesWritesThroughOtherStores() {
    let name = makeSuiteName()
    defer { removeSuiteFile(name) }
    let named = DefaultsStore(suiteName: name)!
    let instance = UserDefaults(suiteName: name)!
    let unknown = DefaultsStore(hub: HubRegistry.hub(for: instance, suiteIsTold: false))
    #expect(!unknown.hub.suiteIsKnown && unknown.hub !== named.hub)
    let seenByUnknown = Recorder<Int>()
    let seenByNamed = Recorder<Int>()
    let tokens = [
      unknown.property(.count).observe { seenByUnknown.append($0) },
      named.property(.count).observe { seenByNamed.append($0) },
    ]
    named[.count] = 3
    #expect(seenByUnknown.values == [0, 3])
    // Saved first: until then a read through the named store answers from its record of its unsaved write (a plain
    // write of the same key, which is what the unknown store's is on Linux, is read once that write is saved).
    named.flush()
    unknown[.count] = 4
    #expect(seenByNamed.values == [0, 3, 4])
    withExtendedLifetime(tokens) {}
  }
}
