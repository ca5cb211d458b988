"""The vocabulary of :mod:`benchmarks.memory_set`: products, order events, support issues, error
codes, paths, names, code names, and the paraphrasable facts with their questions. Plain data, kept
apart from the generator so each stays readable."""

from __future__ import annotations

__all__ = [
    "ADJ",
    "AGENTS",
    "ANIMALS",
    "BOOKINGS",
    "CHITCHAT",
    "CODE_USES",
    "ERROR_CODES",
    "ERROR_CONTEXTS",
    "FACTS",
    "FIRST",
    "ISSUES",
    "LAST",
    "ORDER_EVENTS",
    "PATH_DIRS",
    "PATH_EXTS",
    "PATH_NAMES",
    "PATH_USES",
    "PRODUCTS",
    "PROJECT_STATES",
    "ROLES",
    "SERVICES",
    "TOPICS",
    "WORKAROUNDS",
]

PRODUCTS = [
    "standing desk",
    "office chair",
    "espresso machine",
    "running shoes",
    "winter jacket",
    "laptop stand",
    "noise-cancelling headphones",
    "air purifier",
    "bookshelf",
    "blender",
    "monitor arm",
    "yoga mat",
    "desk lamp",
    "rice cooker",
    "backpack",
    "mechanical keyboard",
]
ORDER_EVENTS = [
    "arrived with a cracked corner; a replacement was promised within five days",
    "was delivered to the neighbour by mistake; the courier will collect it on Friday",
    "is stuck in customs and the user was asked for an import declaration",
    "was refunded in full after the user returned it unopened",
    "arrived missing two screws; spare parts are being sent by post",
    "was cancelled because the warehouse ran out of stock",
    "shipped late and the user got a 10% voucher as an apology",
    "was charged twice on the credit card; the duplicate charge is being reversed",
]
ISSUES = [
    "the mobile app logs them out every few minutes",
    "two-factor codes never arrive by SMS",
    "the invoice shows the wrong billing address",
    "exports to CSV time out for large reports",
    "the calendar sync duplicates every meeting",
    "password reset emails land in spam",
    "the dashboard shows yesterday's numbers",
    "webhook deliveries fail with a timeout",
]
AGENTS = ["Marta", "Kenji", "Lukas", "Amara", "Diego", "Sofia", "Tomasz", "Aisha"]
# One code per "; " or line break (codes hold spaces: "HTTP 429").
ERROR_CODES = (
    """
ERR_TLS_CERT_ALTNAME_INVALID; ERR_OSSL_EVP_UNSUPPORTED; ECONNREFUSED; ECONNRESET
ETIMEDOUT; EADDRINUSE; ENOSPC; EACCES
ERR_MODULE_NOT_FOUND; ERR_REQUIRE_ESM; ORA-12154; ORA-00942
SQLSTATE 40001; SQLSTATE 23505; E11000; OOMKilled
CrashLoopBackOff; ImagePullBackOff; SIGSEGV; HTTP 429
HTTP 502; HTTP 413; CERT_HAS_EXPIRED; UNABLE_TO_VERIFY_LEAF_SIGNATURE
DEPTH_ZERO_SELF_SIGNED_CERT; ERR_CONNECTION_RESET; NXDOMAIN; EPERM
ENOTFOUND; ERR_INVALID_ARG_TYPE
""".replace("\n", "; ")
    .strip("; ")
    .split("; ")
)
SERVICES = [
    "billing service",
    "nightly backup job",
    "staging deploy",
    "payment webhook",
    "search indexer",
    "mobile build",
    "data pipeline",
    "auth proxy",
    "reporting cron",
    "image resizer",
]
ERROR_CONTEXTS = [
    "it calls the partner API",
    "the container starts",
    "it connects to the database",
    "the certificate rotates",
    "traffic spikes in the evening",
    "it uploads large files",
]
WORKAROUNDS = [
    "restarting the pod",
    "pinning the previous version",
    "raising the timeout to 30 seconds",
    "rotating the credentials",
    "clearing the cache volume",
    "switching to the backup region",
]
PATH_DIRS = [
    "/etc/nginx/sites-available",
    "/srv/app/config",
    "~/projects",
    "/var/lib/postgresql",
    "C:\\Users\\Public\\Documents",
    "~/Library/Application Support",
    "/opt/tools/bin",
]
PATH_NAMES = ["shop", "api", "billing", "blog", "intranet", "metrics", "backup", "mail"]
PATH_EXTS = [".conf", ".yaml", ".toml", ".env", ".json", ".sh"]
PATH_USES = [
    "holds the settings the user edits by hand before each release",
    "must be backed up before any upgrade",
    "is the file that broke last time after a bad merge",
    "is read at startup; changes need a restart",
]
FIRST = [
    "Priya",
    "Daniel",
    "Chen",
    "Fatima",
    "Oliver",
    "Lucia",
    "Kwame",
    "Hannah",
    "Mateo",
    "Yuki",
    "Ahmed",
    "Elena",
    "Noah",
    "Ines",
    "Sanjay",
    "Grace",
    "Ivan",
    "Leila",
]
LAST = [
    "Okafor",
    "Schmidt",
    "Nakamura",
    "Rossi",
    "Kowalski",
    "Haddad",
    "Lindqvist",
    "Moreau",
    "Patel",
    "Garcia",
    "Novak",
    "Byrne",
    "Sato",
    "Mensah",
    "Silva",
    "Dubois",
]
ROLES = [
    "accountant, who wants receipts by the 5th of each month",
    "landlord; rent questions go to them by email",
    "manager, who approves travel expenses",
    "dentist; the next check-up is in spring",
    "co-founder, who handles the investor updates",
    "lawyer for the lease dispute",
]
ADJ = ["Blue", "Silent", "Amber", "Northern", "Iron", "Golden", "Crimson", "Quiet", "Swift"]
ANIMALS = ["Heron", "Falcon", "Otter", "Lynx", "Badger", "Marlin", "Sparrow", "Bison"]
PROJECT_STATES = [
    "is waiting for legal sign-off before launch",
    "slipped to next quarter because of hiring",
    "is the migration off the old CRM, due in March",
    "was paused after the budget review",
]
CODE_USES = ["the building's front door", "the bike locker", "the office alarm", "the garage"]
BOOKINGS = [
    "a hotel in Lisbon for three nights",
    "a rental car in Denver",
    "train seats to Vienna",
    "a flight to Osaka in window seats",
    "a cabin in the Alps for the holidays",
]

# Paraphrasable facts: (topic, value, memory text, question within the user, question across users).
FACTS: list[tuple[str, str, str, str, str]] = [
    (
        "job",
        "nurse",
        "Works as a nurse on night shifts at the city hospital.",
        "What does the user do for a living?",
        "Who looks after patients on a hospital ward overnight?",
    ),
    (
        "job",
        "teacher",
        "Teaches maths to teenagers at a secondary school.",
        "What is the user's profession?",
        "Who educates high school students about numbers?",
    ),
    (
        "job",
        "pilot",
        "Flies long-haul routes as a commercial airline pilot.",
        "What kind of work does the user do?",
        "Who is in the cockpit of passenger jets for a living?",
    ),
    (
        "job",
        "chef",
        "Runs the kitchen of a small Italian restaurant as head chef.",
        "What is the user's occupation?",
        "Who cooks professionally and manages a restaurant kitchen?",
    ),
    (
        "job",
        "developer",
        "Writes backend software for a fintech startup.",
        "What does the user work on at their job?",
        "Who programs server code for a financial company?",
    ),
    (
        "pet",
        "dog",
        "Has a golden retriever that needs a walk twice a day.",
        "Does the user have any animals at home?",
        "Whose dog must be taken out for exercise daily?",
    ),
    (
        "pet",
        "cat",
        "Shares the flat with two indoor cats.",
        "What pets live with the user?",
        "Who keeps felines in their apartment?",
    ),
    (
        "pet",
        "none",
        "Is allergic to animal fur, so keeps no pets.",
        "Can the user be around animals?",
        "Who reacts badly to pet hair?",
    ),
    (
        "diet",
        "vegetarian",
        "Does not eat meat or fish; vegetarian for ten years.",
        "What should I keep in mind when suggesting meals?",
        "Who avoids all animal flesh in their food?",
    ),
    (
        "diet",
        "peanuts",
        "Has a severe peanut allergy and carries an epinephrine pen.",
        "Are there foods the user must stay away from?",
        "Who could have a dangerous reaction to groundnuts?",
    ),
    (
        "diet",
        "lactose",
        "Is lactose intolerant; milk and cheese upset their stomach.",
        "Which foods disagree with the user?",
        "Who cannot digest dairy products?",
    ),
    (
        "diet",
        "keto",
        "Follows a low-carb keto diet and skips bread and pasta.",
        "What eating plan is the user on?",
        "Who cuts out starches to stay in ketosis?",
    ),
    (
        "hobby",
        "climbing",
        "Goes bouldering at the climbing gym every weekend.",
        "How does the user spend their free time?",
        "Who scales indoor rock walls on Saturdays?",
    ),
    (
        "hobby",
        "piano",
        "Practises classical piano in the evenings.",
        "What does the user do to relax?",
        "Who plays a keyboard instrument after work?",
    ),
    (
        "hobby",
        "gardening",
        "Grows tomatoes and herbs on the balcony.",
        "What are the user's pastimes?",
        "Who raises vegetables and plants at home?",
    ),
    (
        "hobby",
        "running",
        "Is training for a marathon in the autumn.",
        "Is the user into any sports?",
        "Who is preparing for a 42 kilometre race?",
    ),
    (
        "home",
        "berlin",
        "Moved to Berlin last year for a new job.",
        "Where does the user live now?",
        "Who relocated to the German capital recently?",
    ),
    (
        "home",
        "toronto",
        "Lives in Toronto with their partner.",
        "Which city is the user based in?",
        "Who resides in Canada's largest city?",
    ),
    (
        "home",
        "lisbon",
        "Lives in a small apartment in Lisbon near the river.",
        "Where is the user's home?",
        "Who has a flat in the Portuguese capital?",
    ),
    (
        "home",
        "rural",
        "Lives on a farm two hours from the nearest city.",
        "Does the user live in a town?",
        "Who lives far out in the countryside?",
    ),
    (
        "travel",
        "japan",
        "Is planning a two-week trip to Japan in April.",
        "Any upcoming holidays for the user?",
        "Who will visit Tokyo and Kyoto this spring?",
    ),
    (
        "travel",
        "none",
        "Avoids flying because of a fear of heights.",
        "Does the user like to travel by plane?",
        "Who is afraid of air travel?",
    ),
    (
        "travel",
        "camping",
        "Spends every summer camping in national parks.",
        "What kind of vacations does the user take?",
        "Who sleeps in a tent in the wilderness each year?",
    ),
    (
        "health",
        "back",
        "Has chronic lower back pain and needs a supportive chair.",
        "Does the user have any physical complaints?",
        "Whose spine hurts when sitting for long?",
    ),
    (
        "health",
        "migraine",
        "Gets migraines from bright screens; prefers dark mode.",
        "Is there anything about the user's health to consider?",
        "Who suffers headaches from screen glare?",
    ),
    (
        "health",
        "diabetes",
        "Manages type 1 diabetes with an insulin pump.",
        "Does the user have a medical condition?",
        "Who needs insulin to control blood sugar?",
    ),
    (
        "contact",
        "email",
        "Prefers to be contacted by email, never by phone.",
        "How should I reach the user?",
        "Who wants written messages instead of calls?",
    ),
    (
        "contact",
        "morning",
        "Only takes calls before 10 in the morning.",
        "When is a good time to ring the user?",
        "Who is reachable by telephone only early in the day?",
    ),
    (
        "contact",
        "brief",
        "Wants short answers without small talk.",
        "How does the user like replies to be written?",
        "Who prefers concise responses with no chit-chat?",
    ),
]
TOPICS = sorted({f[0] for f in FACTS})
CHITCHAT = [
    "Mentioned that the weather has been terrible this week.",
    "Said thanks and that the last answer was helpful.",
    "Asked how long support usually takes to reply.",
    "Was in a hurry today and wanted to finish quickly.",
    "Said they will be offline for a few days.",
    "Joked that their coffee machine is the most important device in the office.",
]
