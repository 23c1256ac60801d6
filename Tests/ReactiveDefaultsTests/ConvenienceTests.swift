import Foundation
import Observation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

private let label = DefaultsKey<String>("label", default: "none")
private let tags = DefaultsKey<[String]>("tags", default: [])
private let stamp = DefaultsKey<Date?>("stamp")
private let firstLaunch = DefaultsKey<Date>("firstLaunch", default: { Date() })

final class SettingsObject {
  @Default<Double> var volume: Double
  @Default<Theme> var theme: Theme

  init(store: DefaultsStore) {
    _volume = Default(.volume, store: store)
    _theme = Default(.theme, store: store)
  }
}

struct SettingsValue {
  @Default<Int> var count: Int
  init(store: DefaultsStore) { _count = Default(.count, store: store) }
}

@Observable final class PlayerModel {
  @ObservationIgnored @Default<Double> var volume: Double
  init(store: DefaultsStore) { _volume = Default(.volume, store: store) }
}

@Suite struct PropertyWrapperTests {
  @Test(arguments: Storage.allCases) func readsAndWritesTheStoreInAClassAndAStruct(storage: Storage) {
    let (store, _) = makeStore(storage)
    let object = SettingsObject(store: store)
    #expect(object.volume == 0.5)
    object.volume = 0.9
    #expect(store[.volume] == 0.9)
    object.theme = .dark
    #expect(store[.theme] == .dark)
    let value = SettingsValue(store: store)
    value.count = 4  // a `let` struct: setting writes the store, not the struct
    #expect(store[.count] == 4 && value.count == 4)
  }

  @Test func theProjectedValueIsTheKeysProperty() {
    let (store, _) = makeStore(.memory)
    let object = SettingsObject(store: store)
    #expect(object.$volume.key === DefaultsKeys.volume)
    #expect(object.$volume.store.hub === store.hub)
    let seen = Recorder<Double>()
    let token = object.$volume.observe { seen.append($0) }
    store[.volume] = 0.2
    #expect(seen.values == [0.5, 0.2])
    #expect(store.hub.observerCount == 1)
    withExtendedLifetime(token) {}
  }

  /// `@ObservationIgnored @Default` in an `@Observable` class is tracked: the wrapper reads the property, which
  /// is `Observable` itself.
  @Test(arguments: Storage.allCases) func anObservableModelIsTracked(storage: Storage) async {
    let (store, _) = makeStore(storage)
    let model = PlayerModel(store: store)
    let changed = Recorder<Bool>()
    withObservationTracking {
      _ = model.volume
    } onChange: {
      changed.append(true)
    }
    store[.volume] = 0.7
    #expect(await changed.wait { $0.count == 1 })
    #expect(model.volume == 0.7)
  }
}

@Suite struct SeveralKeysTests {
  @Test(arguments: Storage.allCases) func oneKeyIsLikeAPropertyObserver(storage: Storage) {
    let (store, _) = makeStore(storage)
    let seen = Recorder<Int>()
    let token = store.observe(.count) { seen.append($0) }
    store[.count] = 3
    store[.volume] = 0.1
    #expect(seen.values == [0, 3])
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Storage.allCases) func twoKeysGetTheCurrentValuesOncePerChange(storage: Storage) {
    let (store, _) = makeStore(storage)
    let seen = Recorder<String>()
    let token = store.observe(.volume, .theme) { volume, theme in seen.append("\(volume) \(theme)") }
    store[.volume] = 0.25
    store[.theme] = .dark
    store[.theme] = .dark  // no change
    store[.count] = 9  // unrelated
    #expect(seen.values == ["0.5 system", "0.25 system", "0.25 dark"])
    withExtendedLifetime(token) {}
  }

  @Test(arguments: Storage.allCases) func fiveKeysOfFiveTypesAndCancellationRemovesEveryRegistration(
    storage: Storage
  ) {
    let (store, _) = makeStore(storage)
    let before = store.hub.observerCount
    let seen = Recorder<String>()
    let token = store.observe(.volume, .count, label, tags, .flag, initial: false) { volume, count, name, list, flag in
      seen.append("\(volume) \(count) \(name) \(list) \(flag)")
    }
    #expect(store.hub.observerCount == before + 5)
    #expect(seen.values.isEmpty, "initial: false")
    store[tags] = ["a"]
    store[.count] = 2
    #expect(seen.values == ["0.5 0 none [\"a\"] false", "0.5 2 none [\"a\"] false"])
    token.cancel()
    #expect(store.hub.observerCount == before)
    store[.count] = 3
    #expect(seen.count == 2)
  }

  @Test func theStreamStartsWithTheCurrentValuesAndKeepsTheNewest() async {
    let (store, _) = makeStore(.memory)
    store[.count] = 1
    var iterator = store.changes(of: .count, .theme).makeAsyncIterator()
    let first = await iterator.next()
    #expect(first?.0 == 1 && first?.1 == .system)
    // Slower than the writes: only the newest element is kept.
    store[.count] = 2
    store[.count] = 3
    store[.theme] = .light
    let next = await iterator.next()
    #expect(next?.0 == 3 && next?.1 == .light)
  }
}

@Suite struct WholeSuiteTests {
  @Test(arguments: Storage.allCases) func resettingSeveralKeysTellsEachObserverOnce(storage: Storage) {
    let (store, _) = makeStore(storage)
    store[.volume] = 0.1
    store[.count] = 5
    let volumes = Recorder<Double>()
    let counts = Recorder<Int>()
    let tokens = [
      store.property(.volume).observe(initial: false) { volumes.append($0) },
      store.property(.count).observe(initial: false) { counts.append($0) },
    ]
    store.reset(.volume, .count, .theme)
    #expect(volumes.values == [0.5])
    #expect(counts.values == [0])
    #expect(store[.volume] == 0.5 && store[.count] == 0)
    withExtendedLifetime(tokens) {}
  }

  @Test(arguments: Storage.allCases) func removeAllRemovesEveryKeyAndTellsItsObservers(storage: Storage) {
    let (store, _) = makeStore(storage)
    store[.volume] = 0.1
    store[label] = "x"
    #expect(store.keys == ["label", "volume"])
    let volumes = Recorder<Double>()
    let labels = Recorder<String>()
    let tokens = [
      store.property(.volume).observe(initial: false) { volumes.append($0) },
      store.property(label).observe(initial: false) { labels.append($0) },
    ]
    store.removeAll()
    #expect(store.keys.isEmpty)
    if storage == .suite && isLinux {
      // As `rdefaults delete DOMAIN` does: the suite's file goes, under its lock.
      let file = preferencesFolder.appendingPathComponent("\(store.suiteName!).plist").path
      #expect(!FileManager.default.fileExists(atPath: file))
    }
    #expect(volumes.values == [0.5])
    #expect(labels.values == ["none"])
    withExtendedLifetime(tokens) {}
  }

  @Test(arguments: Storage.allCases) func isDefault(storage: Storage) {
    let (store, _) = makeStore(storage)
    #expect(store.isDefault(.volume))
    store[.volume] = 0.5
    #expect(store.isDefault(.volume), "the default stored")
    store[.volume] = 0.6
    #expect(!store.isDefault(.volume))
    #expect(!store.property(.volume).isDefault)
    #expect(store.isDefault(stamp))
    store[stamp] = Date(timeIntervalSince1970: 0)
    #expect(!store.isDefault(stamp))
    store[stamp] = nil
    #expect(store.isDefault(stamp))
  }

  @Test func aComputedDefaultIsComputedAtEachReadThatFindsNothing() {
    let store = DefaultsStore.inMemory()
    let first = store[firstLaunch]
    let second = store[firstLaunch]
    #expect(second >= first)
    let counter = Mutex(0)
    let counted = DefaultsKey<Int>(
      "counted",
      default: {
        counter.withLock {
          $0 += 1; return $0
        }
      })
    #expect(store[counted] == 1)
    #expect(store[counted] == 2)
    store[counted] = 10
    #expect(store[counted] == 10)
    #expect(counter.withLock { $0 } == 2, "a stored value computes nothing")
  }
}
