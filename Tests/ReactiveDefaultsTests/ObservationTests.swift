import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

/// Observers of two keys (changes only), to show which of them a change reaches.
private func observeVolumeAndCount(
  _ store: DefaultsStore
) -> (volumes: Recorder<Double>, counts: Recorder<Int>, tokens: [DefaultsObservation]) {
  let volumes = Recorder<Double>()
  let counts = Recorder<Int>()
  let tokens = [
    store.property(.volume).observe(initial: false) { volumes.append($0) },
    store.property(.count).observe(initial: false) { counts.append($0) },
  ]
  return (volumes, counts, tokens)
}

@Suite struct ObservationTests {
  @Test(arguments: Storage.allCases) func observeDeliversTheCurrentValueThenChanges(storage: Storage) {
    let (store, _) = makeStore(storage)
    store[.volume] = 0.1
    let seen = Recorder<Double>()
    let token = store.property(.volume).observe { seen.append($0) }
    store[.volume] = 0.2
    store[.volume] = 0.3
    #expect(seen.values == [0.1, 0.2, 0.3])
    #expect(store.hub.observerCount == 1)
    token.cancel()
    store[.volume] = 0.4
    #expect(seen.values == [0.1, 0.2, 0.3])
    #expect(token.isCancelled)
    #expect(store.hub.observerCount == 0)
  }

  @Test(arguments: Storage.allCases) func initialFalseSkipsTheCurrentValue(storage: Storage) {
    let (store, _) = makeStore(storage)
    let seen = Recorder<Int>()
    let token = store.property(.count).observe(initial: false) { seen.append($0) }
    store[.count] = 0  // the value it already has: not a change
    store[.count] = 1
    #expect(seen.values == [1])
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Storage.allCases) func droppingTheTokenEndsTheObservation(storage: Storage) {
    let (store, _) = makeStore(storage)
    let seen = Recorder<Int>()
    do {
      let token = store.property(.count).observe { seen.append($0) }
      store[.count] = 1
      withExtendedLifetime(token) {}
    }
    store[.count] = 2
    #expect(seen.values == [0, 1])
    #expect(store.hub.observerCount == 0)
  }

  @Test func theTokenAloneKeepsTheObservationAlive() {
    let name = makeSuiteName()
    let seen = Recorder<Int>()
    // Neither the store nor the property outlives this line; the token does.
    let token = DefaultsStore(suiteName: name)!.property(.count).observe { seen.append($0) }
    DefaultsStore(suiteName: name)![.count] = 5
    #expect(seen.values == [0, 5])
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Storage.allCases) func writingTheStoredValueAgainNotifiesNobody(storage: Storage) {
    let (store, _) = makeStore(storage)
    let seen = Recorder<String?>()
    let token = store.property(.nickname).observe { seen.append($0) }
    store[.nickname] = nil  // nil → nil
    store.reset(.nickname)
    store[.nickname] = "a"
    store[.nickname] = "a"
    store[.nickname] = nil
    store[.nickname] = nil
    #expect(seen.values == [nil, "a", nil])
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Storage.allCases) func deDuplicatesValuesThatAreNotEquatable(storage: Storage) {
    let (store, _) = makeStore(storage)
    let key = DefaultsKey<Opaque>("opaque", default: Opaque(items: []))
    let seen = Recorder<[String]>()
    let token = store.property(key).observe { seen.append($0.items) }
    store[key] = Opaque(items: ["a"])
    store[key] = Opaque(items: ["a"])
    store[key] = Opaque(items: ["b"])
    #expect(seen.values == [[], ["a"], ["b"]])
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Storage.allCases) func onlyTheChangedKeysObserversRun(storage: Storage) {
    let (store, _) = makeStore(storage)
    let (volumes, counts, tokens) = observeVolumeAndCount(store)
    store[.volume] = 1
    store[.volume] = 2
    #expect(volumes.values == [1, 2])
    #expect(counts.values.isEmpty)
    withExtendedLifetime(tokens) {}
  }

  @Test(arguments: Storage.allCases) func observersRunAfterTheValueIsVisible(storage: Storage) {
    let (store, _) = makeStore(storage)
    let readInside = Recorder<Int>()
    let token = store.property(.count).observe(initial: false) { _ in readInside.append(store[.count]) }
    store[.count] = 9
    #expect(readInside.values == [9])
    withExtendedLifetime(token) {}
  }

  @Test func twoStoresOnOneSuiteShareChanges() {
    let name = makeSuiteName()
    let observing = DefaultsStore(suiteName: name)!
    let writing = DefaultsStore(suiteName: name)!
    let seen = Recorder<Theme>()
    let token = observing.property(.theme).observe { seen.append($0) }
    writing[.theme] = .dark
    #expect(seen.values == [.system, .dark])
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Storage.allCases) func typeMismatchesReachObserversAsTheDefault(storage: Storage) {
    let (store, issues) = makeStore(storage)
    let seen = Recorder<Double>()
    let token = store.property(.volume).observe { seen.append($0) }
    store[.volume] = 0.7
    // Another key type over the same name writes a string.
    store[DefaultsKey<String>("volume", default: "")] = "loud"
    #expect(seen.values == [0.5, 0.7, 0.5])
    #expect(issues.values.contains(.typeMismatch(key: "volume", expected: "Double", found: "String")))
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Storage.allCases) func reentrantWritesFromACallbackDoNotDeadlock(storage: Storage) {
    let (store, _) = makeStore(storage)
    let seen = Recorder<Int>()
    let token = store.property(.count).observe { value in
      seen.append(value)
      if value < 5 { store[.count] = value + 1 }  // writes the key it observes
      _ = store[.volume]
      store[.name] = "\(value)"  // and another key
    }
    #expect(seen.values == [0, 1, 2, 3, 4, 5])
    #expect(store[.count] == 5)
    #expect(store[.name] == "5")
    withExtendedLifetime(token) {}
  }

  // On Apple platforms the plain write posts `didChangeNotification`, whose refresh arrives asynchronously.
  @Test(.linuxOnly) func refreshNotifiesOnlyKeysThatChangedBehindTheLibrarysBack() {
    let (store, _) = makeStore()
    let (volumes, counts, tokens) = observeVolumeAndCount(store)
    store.userDefaults.set(0.9, forKey: "volume")  // plain write: no notification on Linux
    #expect(volumes.values.isEmpty)
    store.refresh()
    #expect(volumes.values == [0.9])
    #expect(counts.values.isEmpty)
    store.refresh()
    #expect(volumes.values == [0.9])
    withExtendedLifetime(tokens) {}
  }

  @Test func didChangeNotificationTriggersARefresh() async {
    let (store, _) = makeStore()
    let seen = Recorder<Int>()
    let token = store.property(.count).observe(initial: false) { seen.append($0) }
    // A write behind the library's back, then the notification Apple posts for it (corelibs posts it only from
    // calls that also synchronize every suite of the process, which would disturb the tests running beside this).
    store.userDefaults.set(12, forKey: "count")
    NotificationCenter.default.post(name: UserDefaults.didChangeNotification, object: store.userDefaults)
    #expect(await seen.wait { $0.last == 12 })
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Storage.allCases) func bindKeepsTwoPropertiesEqualBothWays(storage: Storage) async {
    let (first, _) = makeStore(storage)
    let (second, _) = makeStore(storage)
    // Values are checked through the stores: reading `value` would add an Observation subscription.
    let a = first.property(.volume)
    let b = second.property(.volume)
    a.value = 0.2
    let writesToB = Recorder<Double>()
    let watch = b.observe(initial: false) { writesToB.append($0) }
    let before = first.hub.observerCount + second.hub.observerCount
    let writesToA = Recorder<Double>()
    let watchA = a.observe(initial: false) { writesToA.append($0) }
    let link = a.bind(to: b)
    #expect(second[.volume] == 0.2)  // the receiver's value is copied first
    // The other side follows once the writer's observers have run: on the writing thread, or just after the write
    // returns when another thread is delivering to them (a suite's save re-reads observed keys: only one thread calls
    // a handler at a time). The sanitizer's slowness made a save's delivery overlap the next write here.
    a.value = 0.3
    #expect(await writesToB.wait(timeout: 10 * timeoutScale) { $0.last == 0.3 }, "\(writesToB.values)")
    #expect(second[.volume] == 0.3)
    b.value = 0.4
    #expect(await writesToA.wait(timeout: 10 * timeoutScale) { $0.last == 0.4 }, "\(writesToA.values)")
    #expect(first[.volume] == 0.4)
    #expect(writesToB.values == [0.2, 0.3, 0.4])  // no echo
    watchA.cancel()
    link.cancel()
    #expect(first.hub.observerCount + second.hub.observerCount == before)
    a.value = 0.6
    #expect(second[.volume] == 0.4)
    b.value = 0.7
    #expect(first[.volume] == 0.6)
    _ = watch
  }

  @Test(arguments: Storage.allCases) func eachObserverSeesTheFinalValueAndNeverGoesBackwardsPerWriter(storage: Storage)
    async
  {
    let (store, _) = makeStore(storage)
    let observers = (0..<4).map { _ in Recorder<Int>() }
    let tokens = observers.map { recorder in store.property(.count).observe { recorder.append($0) } }
    // Writers on threads of their own: a write waits for locks (the suite's, corelibs' turn), and 8,000 of them on
    // the test pool's few threads held back every other test of the process.
    await onThreadsOfTheirOwn(4) { index in
      let writer = index + 1
      for step in 0..<2_000 { store[.count] = writer * 10_000 + step }
    }
    let stored = store[.count]
    for recorder in observers {
      #expect(recorder.last == stored)
      // Per writer, values only go forward.
      for writer in 1...4 {
        let mine = recorder.values.filter { $0 / 10_000 == writer }
        #expect(mine == mine.sorted())
      }
    }
    withExtendedLifetime(tokens) {}
  }

  @Test(arguments: Storage.allCases) func withObservationTrackingSeesChanges(storage: Storage) {
    let (store, _) = makeStore(storage)
    let volume = store.property(.volume)
    let fired = trackObservation { _ = volume.value }
    store[.count] = 3  // another key: not tracked
    #expect(fired.values.isEmpty)
    store[.volume] = 0.9  // through the store, not the property
    #expect(fired.values == [true])
  }

  /// IEEE NaN is not equal to itself; as a setting it is: writing NaN again notifies nobody.
  @Test(arguments: Storage.allCases) func aNaNWriteNotifiesOnce(storage: Storage) async throws {
    let (store, _) = makeStore(storage)
    let seen = Recorder<Double>()
    let token = store.property(.volume).observe { seen.append($0) }
    store[.volume] = .nan
    store[.volume] = .nan
    store[.volume] = 0.25
    #expect(await seen.wait { $0.count == 3 })
    #expect(seen.values.count == 3, "\(seen.values)")
    #expect(seen.values[1].isNaN)
    withExtendedLifetime(token) {}
  }

  /// Two bound properties used to echo a NaN forever (the setter never returned).
  @Test(arguments: Storage.allCases) func aBindingSettlesOnNaN(storage: Storage) async throws {
    let (store, _) = makeStore(storage)
    let other = DefaultsKey<Double>("other", default: 0)
    let seen = Recorder<Double>()
    let link = store.property(.volume).bind(to: store.property(other))
    let token = store.property(other).observe { seen.append($0) }
    store[.volume] = .nan
    #expect(store[other].isNaN)
    #expect(seen.values.count == 2, "\(seen.values)")
    withExtendedLifetime((link, token)) {}
  }
}
