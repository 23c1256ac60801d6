import Foundation
import TestSupport
import Testing

@testable import ReactiveDefaults

private let label = DefaultsKey<String>("label", default: "none")
private let tags = DefaultsKey<[String]>("tags", default: [])

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
    var iterator = store.values(of: .count, .theme).makeAsyncIterator()
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
