import Foundation
import Synchronization
import TestSupport
import Testing

@testable import ReactiveDefaults

private let label = DefaultsKey<String>("label", default: "none")
private let stamp = DefaultsKey<Date?>("stamp")
private let firstLaunch = DefaultsKey<Date>("firstLaunch", default: { Date() })

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
    let counter = Locked(0)
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
