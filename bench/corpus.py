"""A synthetic, deterministic, realistic-looking corpus for the benchmarks.

Customer-memory records of the kind an agent writes: calls, emails, meetings and notes about
contacts (event texts of 80-600 characters, built from word lists), plus keyed facts
("employer", "city", ...) that are restated over time. Every function takes a ``seed`` and
returns the same output for the same arguments, so benchmarks (ingest, search, ...) can
rebuild a corpus and its queries without storing it.

``make_records(n, seed)`` returns items exactly as ``POST /records`` takes them, valid for a
``main`` collection whose schema allows ``text``, ``speaker`` (string) and ``tags`` (string
list) and whose mode is ``mixed`` (events without a key, facts with one), as in
``fixtures/catalogs/example`` and ``bench/catalogs/no_processors``.
"""
from __future__ import annotations

import random
from datetime import datetime, timedelta, timezone

FIRST_NAMES = (
    "Maria", "James", "Aisha", "Chen", "Lucas", "Fatima", "Olivia", "Mateo", "Priya", "Noah", "Yuki", "Elena",
    "Omar", "Sofia", "Liam", "Amara", "Diego", "Hannah", "Ivan", "Leila", "Tomas", "Grace", "Kwame", "Ines",
    "Daniel", "Mei", "Samuel", "Zara", "Pedro", "Nadia", "Oskar", "Ruth", "Ahmed", "Clara", "Felix", "Anika",
)
LAST_NAMES = (
    "Garcia", "Smith", "Khan", "Wei", "Martin", "Haddad", "Johnson", "Rossi", "Patel", "Brown", "Tanaka",
    "Popescu", "Farouk", "Lopez", "Murphy", "Okafor", "Silva", "Schmidt", "Petrov", "Nasser", "Novak", "Kim",
    "Mensah", "Costa", "Levi", "Lin", "Adeyemi", "Ali", "Santos", "Ivanova", "Berg", "Cohen", "Yilmaz", "Dubois",
)
COMPANIES = (
    "Acme Logistics", "Northwind Traders", "Bluepeak Energy", "Globex Retail", "Initech Finance", "Umbrella Health",
    "Vandelay Imports", "Stark Fabrication", "Wayne Analytics", "Cyberdyne Robotics", "Soylent Foods",
    "Hooli Cloud", "Pied Piper Media", "Massive Dynamic", "Oceanic Airlines", "Tyrell Bio", "Gringotts Capital",
    "Monarch Insurance", "Duff Beverages", "Wonka Confectionery",
)
CITIES = (
    "Lisbon", "Berlin", "Toronto", "Nairobi", "Osaka", "Austin", "Madrid", "Warsaw", "Singapore", "Bogota",
    "Dublin", "Melbourne", "Cairo", "Seoul", "Chicago", "Lyon", "Oslo", "Mumbai", "Denver", "Cape Town",
)
PRODUCTS = (
    "the analytics dashboard", "the mobile app", "the data export API", "the billing portal", "the Q3 invoice",
    "the onboarding checklist", "the enterprise plan", "the SSO integration", "the usage report",
    "the support contract", "the shipping schedule", "the pilot deployment", "the renewal quote",
    "the security questionnaire", "the migration plan", "the training workshop", "the warehouse sensors",
    "the loyalty programme", "the payment terms", "the API rate limits",
)
TOPICS = (
    "budget", "renewal", "pricing", "onboarding", "outage", "latency", "invoice", "contract", "security",
    "compliance", "training", "integration", "roadmap", "churn-risk", "expansion", "feedback", "delivery",
    "hiring", "procurement", "escalation",
)
CHANNELS = ("call", "email", "meeting", "chat", "note")
WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
ROLES = ("head of procurement", "CTO", "operations manager", "finance director", "product lead",
         "IT administrator", "customer success lead", "VP of sales", "data engineer", "office manager")
FEELINGS = ("pleased", "frustrated", "cautiously optimistic", "concerned", "enthusiastic", "impatient",
            "satisfied", "undecided", "relieved", "sceptical")

OPENERS = (
    "{name} {verb_past} about {product}.",
    "Spoke with {name} from {company} regarding {product}.",
    "{name} ({role} at {company}) reached out about {product}.",
    "Follow-up with {name} on {product}.",
    "{name} sent a note about {product} and the {topic} question.",
    "Quarterly check-in with {name} of {company}.",
)
BODY = (
    "{pronoun} said the team is {feeling} with {product} so far.",
    "{pronoun} asked whether we can move the {topic} review to {weekday}.",
    "The main open point is {topic}; {pronoun_lower} wants a written answer before {month}.",
    "{company} is comparing us with two other vendors on {topic}.",
    "{pronoun} mentioned that {other} will take over {topic} from next {month}.",
    "We agreed to send a revised proposal covering {product} by {weekday}.",
    "There was a {number}% increase in {topic} tickets since the last release.",
    "{pronoun} confirmed a budget of about {money} for the next quarter.",
    "The {city} office needs {product} before the end of {month}.",
    "{pronoun} would prefer to be contacted by {channel} in the future.",
    "Legal still has to sign off on the {topic} clause of the contract.",
    "Action item: {owner} to share the {topic} summary with {name_first} by {weekday}.",
    "{pronoun} was {feeling} about the response time of our support team.",
    "They plan to roll {product} out to {number} more users in {city}.",
    "{pronoun} flagged a possible {topic} issue affecting {number} accounts.",
)
VERBS_PAST = ("called", "emailed", "wrote", "asked", "complained", "followed up", "checked in")
FACT_KEYS = ("employer", "city", "role", "preferred_channel", "timezone", "budget", "renewal_month")
FACT_TEMPLATES = {
    "employer": "{name} works for {company}; this was confirmed during the last {channel} with the account team.",
    "city": "{name} is based in {city} and usually works from the {city} office on {weekday}s.",
    "role": "{name} is the {role} at {company} and signs off on anything related to {topic}.",
    "preferred_channel": "{name} prefers to be contacted by {channel}; avoid scheduling anything on {weekday}s.",
    "timezone": "{name} keeps {city} office hours, so calls should be booked in the morning, {city} time.",
    "budget": "{name} has an approved budget of about {money} for {product} this fiscal year.",
    "renewal_month": "The {company} contract managed by {name} comes up for renewal in {month}.",
}
OWNERS = ("Sam", "Alex", "Jordan", "Robin", "Taylor", "Casey")

MIN_CHARS, MAX_CHARS = 80, 600
BASE_TIME = datetime(2025, 1, 1, tzinfo=timezone.utc)


def make_entities(n: int, seed: int = 0) -> list[dict]:
    """``n`` distinct contacts: ``{"entity", "name", "first", "company", "city", "role"}``."""
    rng = random.Random(f"entities-{seed}")
    entities = []
    for index in range(n):
        first, last = rng.choice(FIRST_NAMES), rng.choice(LAST_NAMES)
        entities.append({"entity": f"contact.{first.lower()}-{last.lower()}-{index}", "name": f"{first} {last}",
                         "first": first, "company": rng.choice(COMPANIES), "city": rng.choice(CITIES),
                         "role": rng.choice(ROLES), "pronoun": rng.choice(("She", "He"))})
    return entities


def _target_length(rng: random.Random) -> int:
    # Log-normal around ~230 characters, clipped to the 80-600 range: mostly short notes, a tail
    # of long meeting summaries.
    return int(min(MAX_CHARS, max(MIN_CHARS, rng.lognormvariate(5.45, 0.5))))


def _slots(rng: random.Random, person: dict) -> dict:
    pronoun = person["pronoun"]
    return {
        "name": person["name"], "name_first": person["first"], "company": person["company"],
        "city": person["city"], "role": person["role"], "pronoun": pronoun, "pronoun_lower": pronoun.lower(),
        "verb_past": rng.choice(VERBS_PAST), "product": rng.choice(PRODUCTS), "topic": rng.choice(TOPICS),
        "feeling": rng.choice(FEELINGS), "weekday": rng.choice(WEEKDAYS), "month": rng.choice(MONTHS),
        "other": f"{rng.choice(FIRST_NAMES)} {rng.choice(LAST_NAMES)}", "number": rng.randint(2, 90),
        "money": f"${rng.randint(5, 400) * 1000:,}", "channel": rng.choice(CHANNELS[:4]),
        "owner": rng.choice(OWNERS),
    }


def _event_text(rng: random.Random, person: dict) -> tuple[str, list[str]]:
    target = _target_length(rng)
    slots = _slots(rng, person)
    parts = [rng.choice(OPENERS).format(**slots)]
    tags = {slots["topic"]}
    length = len(parts[0])
    while length < target:
        slots = _slots(rng, person)
        sentence = rng.choice(BODY).format(**slots)
        if length + 1 + len(sentence) > MAX_CHARS:
            break
        parts.append(sentence)
        tags.add(slots["topic"])
        length += 1 + len(sentence)
    text = " ".join(parts)
    while len(text) < MIN_CHARS:  # a very short opener: pad with one more short sentence
        text += " " + f"Next step agreed for {rng.choice(WEEKDAYS)}."
    return text, sorted(tags)[:4]


def _fact_text(rng: random.Random, person: dict, key: str) -> str:
    text = FACT_TEMPLATES[key].format(**_slots(rng, person))
    if len(text) < MIN_CHARS:
        text += f" Last checked in {rng.choice(MONTHS)}."
    return text[:MAX_CHARS]


def make_records(n: int, seed: int = 0, *, collection: str = "main", entities: list[dict] | None = None,
                 records_per_entity: int = 20, fact_fraction: float = 0.15, dedupe_fraction: float = 0.5,
                 dedupe_prefix: str | None = None) -> list[dict]:
    """``n`` ``POST /records`` items for ``collection``.

    About ``fact_fraction`` of the items are keyed facts (``type: fact`` with a ``key`` from
    ``FACT_KEYS``, restated for the same entity over time); the rest are events (``call``,
    ``email``, ``meeting``, ``chat``, ``note``) without a key. About ``dedupe_fraction`` carry a
    unique ``dedupe_key`` (prefixed with ``dedupe_prefix``, default ``bench-<seed>``) as an
    idempotent client would send. ``occurred_at`` increases through 2025 in item order.
    Entities default to ``make_entities(ceil(n / records_per_entity), seed)``.
    """
    rng = random.Random(f"records-{seed}")
    if entities is None:
        entities = make_entities(max(1, -(-n // records_per_entity)), seed)
    prefix = dedupe_prefix if dedupe_prefix is not None else f"bench-{seed}"
    span = timedelta(days=364).total_seconds()
    items = []
    for index in range(n):
        person = rng.choice(entities)
        occurred = BASE_TIME + timedelta(seconds=int(span * (index + rng.random()) / max(n, 1)))
        item = {"entity": person["entity"], "collection": collection,
                "occurred_at": occurred.isoformat().replace("+00:00", "Z")}
        if rng.random() < fact_fraction:
            key = rng.choice(FACT_KEYS)
            text = _fact_text(rng, person, key)
            item.update(type="fact", key=key, text=text, content={"speaker": person["name"], "tags": [key]})
        else:
            kind = rng.choice(CHANNELS)
            text, tags = _event_text(rng, person)
            speaker = person["name"] if kind != "note" else rng.choice(OWNERS)
            item.update(type=kind, text=text, content={"speaker": speaker, "tags": tags})
        if rng.random() < dedupe_fraction:
            item["dedupe_key"] = f"{prefix}-{index}"
        items.append(item)
    return items


def make_queries(records: list[dict], n: int, seed: int = 0) -> list[dict]:
    """``n`` search queries drawn from ``records`` (as built by ``make_records``): each is
    ``{"q", "entity", "source_index"}``, ``q`` being a few content words of record
    ``source_index`` (a paraphrase-free, lexically answerable query)."""
    rng = random.Random(f"queries-{seed}")
    stop = {"the", "a", "an", "and", "of", "to", "for", "by", "on", "in", "with", "about", "from", "is", "was",
            "be", "we", "she", "he", "they", "her", "his", "their", "that", "this", "so", "far", "at", "or"}
    queries = []
    for _ in range(n):
        index = rng.randrange(len(records))
        words = [w.strip(".,;:()!?") for w in records[index]["text"].split()]
        words = [w for w in words if w and w.lower() not in stop]
        start = rng.randrange(max(1, len(words) - 4))
        queries.append({"q": " ".join(words[start:start + rng.randint(3, 5)]), "entity": records[index]["entity"],
                        "source_index": index})
    return queries


def batches(items: list, size: int = 100) -> list[list]:
    """``items`` in consecutive lists of at most ``size``."""
    return [items[start:start + size] for start in range(0, len(items), size)]


if __name__ == "__main__":  # a quick look: python bench/corpus.py
    import json
    import statistics

    sample = make_records(1000, seed=1)
    lengths = [len(item["text"]) for item in sample]
    print(json.dumps(sample[:3], indent=2))
    print(f"records: {len(sample)}  text chars: min {min(lengths)} median {statistics.median(lengths)} "
          f"max {max(lengths)}  facts: {sum('key' in item for item in sample)}  "
          f"with dedupe_key: {sum('dedupe_key' in item for item in sample)}")
