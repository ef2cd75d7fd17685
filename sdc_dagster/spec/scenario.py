"""The disclosure scenario's vocabulary: the names, labels and statistical office codes by which
the draft (:mod:`sdc_dagster.spec.roles`) recognises what a column is (SPEC §1.1).

A name is split into lower-case tokens (:func:`name_tokens`); a word pattern matches when a token
or the whole name without separators matches it in full (:func:`named`). :func:`scenario_group`
names the group of the disclosure scenario (:data:`SCENARIO`: the key variables an intruder knows
from registers or acquaintance, Hundepool et al. 2012, "Statistical Disclosure Control", chapter 3)
a variable belongs to, and :func:`is_age_name` the one notion of an age. The other patterns
recognise identifiers, household and cluster ids, weights, counts, amounts and sensitive variables.
"""

from __future__ import annotations

import re
import unicodedata

def words_pattern(pattern: str) -> re.Pattern:
    """A case-insensitive pattern of alternative words, matched in full against a name's tokens."""
    return re.compile(rf"(?:{pattern})", re.I)


# The disclosure scenario, in priority order: group -> (name token pattern, label pattern). A name is
# split into lower-case tokens at "_", ".", digits and camelCase; a group matches when a token or the
# whole name without separators matches its pattern in full, or its label pattern occurs in the label.
SCENARIO: dict[str, tuple[str, str]] = {
    "age": (r"x?age|ages|ageg\w*|agecat|edad|wiek|alter|yob|yearbir|birth\w*|yearofbirth|dateofbirth|byear|dob|born|"
            r"anonac\w*|rokur\w*",
            r"\bage\b|year of birth|date of birth|\bedad\b|wiek|rok urodzenia|año de nacimiento|fecha de nacimiento"),
    "sex": (r"sex|gender|male|female|sexo|plec|sx", r"\bsex\b|gender|\bsexo\b|płeć|\bplec\b"),
    "region": (r"region|regio|reg|nuts\w*|province|provincia|prov|state|county|district|municip\w*|comuna|"
               r"wojewodztwo|woj|powiat|gmina|urban|rural|urbrur|urbani[sz]ation|degurba|smsa|msa|metro|south|"
               r"north|northeast|northcen\w*|west|east|midwest|residence|location|geo|city|town|village|ccaa",
               r"region|province|district|urban|rural|degree of urbani|geograph|metropolitan|residence"),
    "marital status": (r"marital\w*|maritl|marstat|married|maried|single|divorce\w*|widow\w*|estadocivil|stancywilny",
                       r"marital|civil status|estado civil|stan cywilny"),
    "household size": (r"hhsize|hsize|householdsize|hhnbpers|famsize|familysize|nbpers|npers|hhmembers|"
                       r"tamhogar|liczbaosob\w*",
                       r"household size|number of (household )?(members|persons)|tamaño del hogar|liczba osób"),
    "household composition": (r"hhtype|hhtyp|typhh|hhcomp\w*|householdtype|householdcomp\w*|hhstruct\w*|famtype|"
                              r"familytype|famcomp\w*|composition|tipohogar|typgosp\w*|skladgosp\w*",
                              r"household (type|composition|structure)|family type|type of household|"
                              r"tipo de hogar|composici[oó]n del hogar|typ gospodarstwa|skład gospodarstwa"),
    "citizenship": (r"citizen\w*|nationality|national|countryb|cob|country\w*|native\w*|nativity|birthplace|"
                    r"placeofbirth|foreign\w*|immigr\w*|migrant\w*|obywatel\w*|krajur\w*|nacionalidad|"
                    r"pais\w*|paisnac\w*|language|lang",
                    r"citizen|nationality|country of birth|place of birth|native country|language|"
                    r"pa[ií]s de nacimiento|nacionalidad|obywatelstwo|kraj urodzenia"),
    "ethnicity": (r"ethn\w*|etni\w*|race|racial|raza|black|white|nonwhite|nwhite|hispanic|hisp|afam|minrty|minority|"
                  r"narodowosc|pochodzenie",
                  r"ethnic|\brace\b|racial|\braza\b|étnic|etnic|narodowość|pochodzenie"),
    "education": (r"educ\w*|edu|school|schooling|isced|degree|diploma|qualif\w*|hatlev\w*|estudios|"
                  r"wyksztalcenie|wykszt|hschool",
                  r"education|school|isced|degree|qualification"),
    "occupation": (r"occup\w*|occu|occucode|\w+occu|occ|\w+occ|isco\w*|profession|job|ocupacion|zawod",
                   r"occupation|isco|profession|ocupaci[oó]n|zawód"),
    "economic activity": (r"industry|indus\w*|sector|nace\w*|activity|branch|workstat|wrkstat|empstat|"
                          r"workclass|classofworker|selfemp\w*|ilostat|wstator|parttime|fulltime|construc|ndurman|"
                          r"trcommpu|trade|services|profserv|manuf\w*|actividad|rama|sektor|dzialalnosc",
                          r"industry|economic activity|nace|employment status|economic status|sector|"
                          r"class of worker|actividad econ|rama de actividad|rodzaj działalności"),
    "household relationship": (r"relat|relationship|relhead|hhlink|parentesco", r"relationship to"),
    "dwelling": (r"roof|walls?|water|electcon|electricity|toilet|floor|dwelling|owned|ownhome|condo\w*|apartment",
                 r"dwelling|roof|walls|drinking water|electricity"),
}


# The order names are tried in, where it differs from the priority: "country_of_birth" is a country,
# not an age (its word "birth").
MATCH_ORDER = ["citizenship"] + [group for group in SCENARIO if group != "citizenship"]


# Scenario groups whose numbers are codes (ISCO, NACE, NUTS, ISCED, ...): categorical however many;
# age, year of birth and household size may be numbers too many for a categorical key.
CODED_GROUPS = {"sex", "region", "marital status", "household composition", "citizenship", "ethnicity", "education",
                 "occupation", "economic activity", "household relationship", "dwelling"}


# Scenario groups of counted or ordered whole numbers (years of age, years of birth, persons): a
# categorical key on an ordinal scale when whole-numbered, however many values.
ORDINAL_GROUPS = {"age", "household size"}


# Coded scenario groups whose numeric codes are ordered: education (years of schooling; ISCED levels
# 0-8, UNESCO 2012, "International Standard Classification of Education"): without value labels, a
# categorical key on an ordinal scale, merged by adjacent codes only, never doctorate with pre-school.
ORDERED_CODE_GROUPS = {"education"}


SCENARIO_PATTERNS = {group: (re.compile(rf"(?:{tokens})", re.I), re.compile(label, re.I))
             for group, (tokens, label) in SCENARIO.items()}


# Variable codes of statistical offices (Eurostat EU-SILC and LFS, sdcMicro's example data), by
# what they are: a scenario group, or a role.
VARIABLE_CODES: dict[str, str] = {
    # EU-SILC
    "db040": "region", "db100": "region", "rb080": "age", "pb140": "age", "rb090": "sex", "pb150": "sex",
    "pb190": "marital status", "pb200": "marital status", "pb220a": "citizenship", "pb210": "citizenship",
    "pe040": "education", "pl051": "occupation", "pl111": "economic activity", "pl031": "economic activity",
    "hx040": "household size", "rb210": "economic activity",
    "db030": "id", "hb030": "id", "rb030": "id", "pb030": "id", "rb040": "id", "px030": "id", "rx030": "id",
    "rb220": "id", "rb230": "id", "rb240": "id",
    "db080": "household weight", "db090": "household weight", "db095": "household weight",
    "rb050": "weight", "rb050a": "weight", "rb060": "weight", "rb062": "weight", "rb063": "weight",
    "rb064": "weight", "pb040": "weight", "pb050": "weight", "pb060": "weight", "pb080": "weight",
    "hy010": "total amount", "hy020": "total amount", "hy022": "total amount", "hy023": "total amount",
    "hx090": "total amount",
    # LFS
    "sex": "sex", "yearbir": "age", "age": "age", "region": "region", "degurba": "region",
    "countryb": "citizenship", "national": "citizenship", "marstat": "marital status",
    "hatlev1d": "education", "hatlev": "education", "isco4d": "occupation", "isco3d": "occupation",
    "nace3d": "economic activity", "nace2d": "economic activity", "ilostat": "economic activity",
    "wstator": "economic activity", "hhnbpers": "household size", "hhlink": "household relationship",
    "hhnum": "id", "qhhnum": "id", "hhseqnum": "id", "coeff": "weight",  # HHSEQNUM: person number in household
    # sdcMicro's CASCrefmicrodata (CASC project's business/tax test file): AFNLWGT is its weight
    "afnlwgt": "weight", "agi": "total amount", "ptotval": "total amount", "emcontrb": "amount", "fica": "amount",
    # European Social Survey (ESS codebook): age, gender, years of education, household income decile
    "agea": "age", "gndr": "sex", "eduyrs": "education", "eisced": "education", "hinctnta": "sensitive",
    "domicil": "region",
    # sdcMicro's testdata: its keys, and hhcivil, the sensitive variable of its l-diversity example
    "urbrur": "region", "roof": "dwelling", "walls": "dwelling", "water": "dwelling",
    "electcon": "dwelling", "relat": "household relationship", "hhcivil": "sensitive",
}


# EU-SILC income variables: PY010G..PY140N (personal), HY010..HY145N (household), HX... derived.
AMOUNT_CODE = re.compile(r"(py|hy)\d{3}[gn]?|hx\d{3}", re.I)


IDENTIFIER_TOKEN = words_pattern(r"name|surname|firstname|lastname|nombre|apellido|nazwisko|imie|address|direccion|adres|"
                           r"phone|telefono|telefon|email|mail|pesel|nif|dni|nie|ssn|passport|street|zip|postcode")


ID_TOKEN = words_pattern(r"id|ids|ident\w*|idno|caseid|serial|seqno|recno|nr|nro|pid|respid|rownames?|rownum\w*|"
                   r"obsno|index|idx")


# "UTILNAME", "firmName", "COMPANY_NAME" (text, or codes labelled with the names); "UTILITYID", "firmId"
# (the case tells an id from "paid"), "utilityid", "firmid" (a unit's word before it)
NAME_SUFFIX = re.compile(r"(?i:name)$")


ID_SUFFIX = re.compile(r"[A-Za-z](ID|Id)$|(?i:(util\w*|firm|company|enterprise|person|household|house|hh|school|"
                        r"unit|case|resp\w*)_?id)$")


#: A text column named like a name with at least this many different values names units.
MIN_NAMES = 20


PERSON_TOKEN = words_pattern(r"person|pers|pernum|pno|pnr|member|lineno|line|student|pupil|respondent|respond|resp")


HOUSEHOLD_TOKEN = words_pattern(r"hid|hhid|hh|hhnr|household|hogar|vivienda|gospodarstw\w*|gd|famid|family|fam")


CLUSTER_TOKEN = words_pattern(r"cluster|psu|school|schid|schoolid|firm|company|village|community|class|classroom|caseid")


WEIGHT_TOKEN = words_pattern(r"weights?|wgt\w*|\w*wgt|wght|pweight|hweight|perwt|hhwt|peso|ponder\w*|waga|grossing")


WEAK_WEIGHT_TOKEN = words_pattern(r"w|wt|fac|factor|fexp|expansion|coef")


# Words a misspelt weight name is near (difflib's ratio at least 0.8, same first letter: "Weigt",
# "wieght", not "height" or "eight"); short words ("peso", "waga") are left out: "person" is near "peso".
WEIGHT_WORDS = ("weight", "weights", "ponderacion", "grossing")


# Counted or dated whole numbers outside the scenario: ordinal if they become keys.
COUNT_TOKEN = words_pattern(r"years?|yrs?|\w+year|year\w+|anno|ano|rok|count|cnt|number|childs|children|kids|nchild\w*|"
                      r"persons|members|hijos|dzieci")


WEIGHT_LABEL = re.compile(r"weight|grossing|expansion factor|factor de expansi|ponderaci|waga", re.I)


NOT_WEIGHT_LABEL = re.compile(r"\bkg\b|\blbs?\b|pound|body|birth ?weight|gram", re.I)


HOUSEHOLD_LEVEL = words_pattern(r"hh|household|hogar|house|dom|db\d{3}|hx\d{3}")


SENSITIVE_TOKEN = words_pattern(r"\w*health\w*|\w*hlth\w*|disea\w*|illness|ill|religi\w*|relig|attend|wyznanie|"
                          r"union|sindicato|crime|criminal|politic\w*|party|partido|partia|"
                          r"vote|salud|enfermedad|zdrowie|choroba|sexual\w*|disab\w*|physlm|inj\w*|dead|death|died|"
                          r"mortality|abortion|affairs?|extramarital|infidel\w*")


SENSITIVE_LABEL = re.compile(r"health|disease|illness|injur|religio|trade union|crime|politic|disab",
                              re.I)


AMOUNT_TOKEN = words_pattern(r"income\w*|inc|\w+inc|earn\w*|wages?|\w*wage|salar\w*|pay|turnover|sales|revenue\w*|"
                       r"expend\w*|expense\w*|spend\w*|consum\w*|assets?|value|val|\w*revenues?|\w+sales|treasury|funds?|"
                       r"depreciation|outcome|liabilit\w*|equity|receivables?|payables?|"
                       r"\w*(tot|oth|earn|ern|sal|int|inc)val|"
                       r"profits?|cost|costs|rent|"
                       r"\w*tax|taxes|benefits?|pensions?|saving\w*|wealth|debts?|capital|output|invest\w*|"
                       r"\w+dol|dollars|amount|price|ingreso\w*|salario|renta|gasto\w*|dochod\w*|wynagrodz\w*|"
                       r"przychod\w*|rd")


AMOUNT_LABEL = re.compile(r"income|earning|wage|salary|turnover|sales|revenue|expenditure|consumption|assets|"
                           r"profit|pension|benefit|amount|in (dollars|euro|eur|usd)", re.I)


TOTAL_TOKEN = words_pattern(r"tot\w*|gross|disposable|income|inc|wage|wages|earnings|expend\w*|sales|turnover")


def name_tokens(name: str) -> list[str]:
    """The lower-case words of a column name, split at separators, digits and camelCase, plus the
    whole name without separators (``hh_size`` -> ``hh``, ``size``, ``hhsize``); accents are folded
    first (``région`` -> ``region``, ``año`` -> ``ano``: Unicode NFKD without combining marks)."""
    name = "".join(c for c in unicodedata.normalize("NFKD", name) if not unicodedata.combining(c))
    spaced = re.sub(r"([a-z])([A-Z])", r"\1_\2", name)
    words = [w for w in re.split(r"[^A-Za-z]+", spaced.lower()) if w]
    squashed = re.sub(r"[^a-z]", "", name.lower())
    return words + ([squashed] if squashed and squashed not in words else [])


def named(pattern: re.Pattern, tokens: list[str]) -> bool:
    """Whether one of a name's tokens (:func:`name_tokens`) matches ``pattern`` in full."""
    return any(pattern.fullmatch(t) for t in tokens)


# A rating of something rather than the thing: "JobInvolvement", "JobSatisfaction" and
# "RelationshipSatisfaction" (1-4 scores in IBM's attrition file) are not an occupation or a
# relationship to the household head, and an intruder does not know them from a register.
SCORE_TOKEN = words_pattern(r"satisf\w*|involvement|engagement|rating|ratings|score|scores|attitudes?|opinions?|"
                            r"balance|performance|happiness|trust")


def scenario_group(name: str, label: str = "") -> str | None:
    """The group of the disclosure scenario (:data:`SCENARIO`) a variable belongs to, or None:
    by office variable code first, then by the words of its name (none for a rating,
    :data:`SCORE_TOKEN`), then by its label."""
    code = VARIABLE_CODES.get(name.lower())
    if code in SCENARIO:
        return code
    if code is not None:
        return None
    tokens = name_tokens(name)
    if named(SCORE_TOKEN, tokens):
        return None
    for group in MATCH_ORDER:
        if named(SCENARIO_PATTERNS[group][0], tokens):
            return group
    for group, (_, label_pattern) in SCENARIO_PATTERNS.items():
        if label and label_pattern.search(label):
            return group
    return None


def derived_name_of(name: str, columns) -> str | None:
    """The column ``name`` is a log or square of (``lwage``, ``lnsales``, ``expersq``), if any."""
    lower = {str(c).lower(): str(c) for c in columns if str(c) != name}
    low = name.lower()
    for prefix in ("log_", "log", "ln_", "ln", "l_", "l"):
        if low.startswith(prefix) and low[len(prefix):] in lower:
            return lower[low[len(prefix):]]
    for suffix in ("_sq", "sq", "2", "_squared"):
        stem = low.removesuffix(suffix)
        if stem != low and len(stem) >= 3:
            found = [original for other, original in lower.items() if other.startswith(stem)]
            if found:
                return found[0]
    return None


def is_age_name(name: str, label: str = "") -> bool:
    """Whether a variable is an age or a year of birth by its name, office code or label: the
    scenario group "age" of :func:`scenario_group` (age, edad, wiek, Alter, age_head, yob, EU-SILC's
    RB080). The draft's one notion of an age: its role (a categorical key on an ordinal scale when in
    whole years) and its bands (5, 10 and 20 years, :func:`~sdc_dagster.spec.drafted_hierarchies.band_widths`)."""
    return scenario_group(name, label) == "age"
