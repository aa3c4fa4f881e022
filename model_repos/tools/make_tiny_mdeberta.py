#!/usr/bin/env python3
"""Regenerate the tiny mDeBERTa-v3-style NLI classifier kept under ``model_repos/assets/tiny-mdeberta``.

It stands in for ``mDeBERTa-v3-base-xnli`` (the seed scenario's model) in tests: same architecture family
(DeBERTa-v2 with disentangled relative attention and mDeBERTa-v3's attention settings), same inputs
(``input_ids`` and ``attention_mask``, INT64 [batch, 512]), same output (``logits``, FP32 [batch, 3]) and
label order, but a few hundred thousand parameters trained in minutes on CPU on a synthetic NLI task in six
languages. Every step is seeded:

1. build a template corpus (en, de, fr, es, ko, zh) and train a SentencePiece-style Unigram tokenizer on it;
2. build ``DebertaV2ForSequenceClassification`` and train it on premise/hypothesis pairs from the templates;
3. export it to ONNX, compare ONNX Runtime with torch, and check every pair of the samples file.

Needs torch and transformers, but only to regenerate (``check_tiny_mdeberta.py`` and the tests do not):

    python model_repos/tools/make_tiny_mdeberta.py --out model_repos/assets/tiny-mdeberta
"""

from __future__ import annotations

import os

# Set before tokenizers is imported: keeps its trainer on one thread.
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

import argparse
import hashlib
import json
import random
import sys
import textwrap
import time
import warnings
from collections import Counter
from collections.abc import Callable
from collections.abc import Iterator
from collections.abc import Sequence
from dataclasses import asdict
from dataclasses import dataclass
from dataclasses import replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import onnxruntime
import tokenizers
import torch
import transformers
from check_tiny_mdeberta import Float32Array
from check_tiny_mdeberta import Row
from check_tiny_mdeberta import Sample
from check_tiny_mdeberta import encode_pairs
from check_tiny_mdeberta import failures
from check_tiny_mdeberta import format_table
from check_tiny_mdeberta import onnx_logits
from check_tiny_mdeberta import open_session
from check_tiny_mdeberta import padded
from check_tiny_mdeberta import score
from check_tiny_mdeberta import summary
from tokenizers import Tokenizer
from tokenizers import decoders
from tokenizers import models
from tokenizers import normalizers
from tokenizers import pre_tokenizers
from tokenizers import processors
from tokenizers import trainers
from transformers import DebertaV2Config
from transformers import DebertaV2ForSequenceClassification

MODEL_REPOS = Path(__file__).resolve().parent.parent
REPO_ROOT = MODEL_REPOS.parent
ID2LABEL = {0: "entailment", 1: "neutral", 2: "contradiction"}  # mDeBERTa-v3-base-xnli's order
LABEL2ID = {label: index for index, label in ID2LABEL.items()}
MAX_LENGTH = 512
# mDeBERTa's ids: [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3, and [MASK] after the sentencepiece vocabulary.
SPECIAL_TOKENS = ("[PAD]", "[CLS]", "[SEP]", "[UNK]")
MASK_TOKEN = "[MASK]"
ONNX_OPSET = 17
MAX_ONNX_TORCH_DIFF = 1e-4
TextPair = tuple[str, str]

# --------------------------------------------------------------------------------------------------------
# Lexicon: concepts shared by all languages, realised per language. Each verb takes only objects that make
# sense with it, so that the sentences read naturally.

VERB_OBJECTS: dict[str, tuple[str, ...]] = {
    "eat": ("bread", "apple", "fish", "cake"),
    "read": ("newspaper", "book", "letter"),
    "drink": ("water", "coffee", "tea"),
    "buy": ("bread", "apple", "fish", "cake", "newspaper", "book", "coffee", "tea"),
    "like": ("bread", "apple", "fish", "cake", "soup", "book", "coffee", "tea"),
    "write": ("letter", "book"),
    "cook": ("fish", "soup"),
    "open": ("door", "window", "letter", "book"),
}


@dataclass(frozen=True)
class Lexicon:
    subjects: dict[str, tuple[str, str]]  # concept -> (with adjective, without)
    verbs: dict[str, tuple[str, str]]  # concept -> (affirmative, negated)
    objects: dict[str, str]
    adjuncts: dict[str, str]
    # (subject, verb, object, adjunct or None, negated) -> sentence
    order: Callable[[str, str, str, str | None, bool], str]


def _capitalized(text: str) -> str:
    return text[:1].upper() + text[1:]


def _svo(subject: str, verb: str, obj: str, adjunct: str | None, negated: bool) -> str:
    return _capitalized(" ".join(part for part in (subject, verb, obj, adjunct) if part)) + "."


def _german(subject: str, verb: str, obj: str, adjunct: str | None, negated: bool) -> str:
    # Sentence negation of a clause with a definite object: "nicht" closes the clause.
    parts = (subject, verb, obj, adjunct, "nicht" if negated else None)
    return _capitalized(" ".join(part for part in parts if part)) + "."


def _has_final_consonant(word: str) -> bool:
    code = ord(word[-1]) - 0xAC00
    return 0 <= code < 11172 and code % 28 != 0


def _korean(subject: str, verb: str, obj: str, adjunct: str | None, negated: bool) -> str:
    subject += "이" if _has_final_consonant(subject) else "가"
    obj += "을" if _has_final_consonant(obj) else "를"
    return " ".join(part for part in (subject, adjunct, obj, verb) if part) + "."


def _chinese(subject: str, verb: str, obj: str, adjunct: str | None, negated: bool) -> str:
    return f"{subject}{adjunct or ''}{verb}{obj}。"


LEXICONS: dict[str, Lexicon] = {
    "en": Lexicon(
        subjects={
            "man": ("the old man", "the man"),
            "woman": ("the young woman", "the woman"),
            "girl": ("the little girl", "the girl"),
            "teacher": ("the tired teacher", "the teacher"),
            "student": ("the hungry student", "the student"),
            "doctor": ("the cheerful doctor", "the doctor"),
            "farmer": ("the young farmer", "the farmer"),
            "grandmother": ("the kind grandmother", "the grandmother"),
            "boy": ("the small boy", "the boy"),
            "cook": ("the busy cook", "the cook"),
        },
        verbs={
            "eat": ("eats", "does not eat"),
            "read": ("reads", "does not read"),
            "drink": ("drinks", "does not drink"),
            "buy": ("buys", "does not buy"),
            "like": ("likes", "does not like"),
            "write": ("writes", "does not write"),
            "cook": ("cooks", "does not cook"),
            "open": ("opens", "does not open"),
        },
        objects={
            "bread": "the bread",
            "apple": "the apple",
            "fish": "the fish",
            "cake": "the cake",
            "soup": "the soup",
            "newspaper": "the newspaper",
            "book": "the book",
            "letter": "the letter",
            "water": "the water",
            "coffee": "the coffee",
            "tea": "the tea",
            "door": "the door",
            "window": "the window",
        },
        adjuncts={
            "garden": "in the garden",
            "morning": "every morning",
            "home": "at home",
            "kitchen": "in the kitchen",
            "evening": "in the evening",
        },
        order=_svo,
    ),
    "de": Lexicon(
        subjects={
            "man": ("der alte Mann", "der Mann"),
            "woman": ("die junge Frau", "die Frau"),
            "girl": ("das kleine Mädchen", "das Mädchen"),
            "teacher": ("der müde Lehrer", "der Lehrer"),
            "student": ("der hungrige Student", "der Student"),
            "doctor": ("die fröhliche Ärztin", "die Ärztin"),
            "farmer": ("der junge Bauer", "der Bauer"),
            "grandmother": ("die nette Großmutter", "die Großmutter"),
            "boy": ("der kleine Junge", "der Junge"),
            "cook": ("der fleißige Koch", "der Koch"),
        },
        verbs={
            "eat": ("isst", "isst"),
            "read": ("liest", "liest"),
            "drink": ("trinkt", "trinkt"),
            "buy": ("kauft", "kauft"),
            "like": ("mag", "mag"),
            "write": ("schreibt", "schreibt"),
            "cook": ("kocht", "kocht"),
            "open": ("öffnet", "öffnet"),
        },
        objects={
            "bread": "das Brot",
            "apple": "den Apfel",
            "fish": "den Fisch",
            "cake": "den Kuchen",
            "soup": "die Suppe",
            "newspaper": "die Zeitung",
            "book": "das Buch",
            "letter": "den Brief",
            "water": "das Wasser",
            "coffee": "den Kaffee",
            "tea": "den Tee",
            "door": "die Tür",
            "window": "das Fenster",
        },
        adjuncts={
            "garden": "im Garten",
            "morning": "jeden Morgen",
            "home": "zu Hause",
            "kitchen": "in der Küche",
            "evening": "am Abend",
        },
        order=_german,
    ),
    "fr": Lexicon(
        subjects={
            "man": ("le vieil homme", "l'homme"),
            "woman": ("la jeune femme", "la femme"),
            "girl": ("la petite fille", "la fille"),
            "teacher": ("le professeur fatigué", "le professeur"),
            "student": ("l'étudiant affamé", "l'étudiant"),
            "doctor": ("le médecin joyeux", "le médecin"),
            "farmer": ("le jeune fermier", "le fermier"),
            "grandmother": ("la gentille grand-mère", "la grand-mère"),
            "boy": ("le petit garçon", "le garçon"),
            "cook": ("le cuisinier occupé", "le cuisinier"),
        },
        verbs={
            "eat": ("mange", "ne mange pas"),
            "read": ("lit", "ne lit pas"),
            "drink": ("boit", "ne boit pas"),
            "buy": ("achète", "n'achète pas"),
            "like": ("aime", "n'aime pas"),
            "write": ("écrit", "n'écrit pas"),
            "cook": ("prépare", "ne prépare pas"),
            "open": ("ouvre", "n'ouvre pas"),
        },
        objects={
            "bread": "le pain",
            "apple": "la pomme",
            "fish": "le poisson",
            "cake": "le gâteau",
            "soup": "la soupe",
            "newspaper": "le journal",
            "book": "le livre",
            "letter": "la lettre",
            "water": "l'eau",
            "coffee": "le café",
            "tea": "le thé",
            "door": "la porte",
            "window": "la fenêtre",
        },
        adjuncts={
            "garden": "dans le jardin",
            "morning": "chaque matin",
            "home": "à la maison",
            "kitchen": "dans la cuisine",
            "evening": "le soir",
        },
        order=_svo,
    ),
    "es": Lexicon(
        subjects={
            "man": ("el hombre mayor", "el hombre"),
            "woman": ("la mujer joven", "la mujer"),
            "girl": ("la niña pequeña", "la niña"),
            "teacher": ("el profesor cansado", "el profesor"),
            "student": ("el estudiante hambriento", "el estudiante"),
            "doctor": ("el médico alegre", "el médico"),
            "farmer": ("el granjero joven", "el granjero"),
            "grandmother": ("la abuela amable", "la abuela"),
            "boy": ("el niño pequeño", "el niño"),
            "cook": ("el cocinero ocupado", "el cocinero"),
        },
        verbs={
            "eat": ("come", "no come"),
            "read": ("lee", "no lee"),
            "drink": ("bebe", "no bebe"),
            "buy": ("compra", "no compra"),
            "like": ("prefiere", "no prefiere"),
            "write": ("escribe", "no escribe"),
            "cook": ("cocina", "no cocina"),
            "open": ("abre", "no abre"),
        },
        objects={
            "bread": "el pan",
            "apple": "la manzana",
            "fish": "el pescado",
            "cake": "el pastel",
            "soup": "la sopa",
            "newspaper": "el periódico",
            "book": "el libro",
            "letter": "la carta",
            "water": "el agua",
            "coffee": "el café",
            "tea": "el té",
            "door": "la puerta",
            "window": "la ventana",
        },
        adjuncts={
            "garden": "en el jardín",
            "morning": "cada mañana",
            "home": "en casa",
            "kitchen": "en la cocina",
            "evening": "por la noche",
        },
        order=_svo,
    ),
    "ko": Lexicon(
        subjects={
            "man": ("나이 든 남자", "남자"),
            "woman": ("젊은 여자", "여자"),
            "girl": ("어린 소녀", "소녀"),
            "teacher": ("피곤한 선생님", "선생님"),
            "student": ("배고픈 학생", "학생"),
            "doctor": ("명랑한 의사", "의사"),
            "farmer": ("젊은 농부", "농부"),
            "grandmother": ("친절한 할머니", "할머니"),
            "boy": ("작은 소년", "소년"),
            "cook": ("바쁜 요리사", "요리사"),
        },
        verbs={
            "eat": ("먹어요", "먹지 않아요"),
            "read": ("읽어요", "읽지 않아요"),
            "drink": ("마셔요", "마시지 않아요"),
            "buy": ("사요", "사지 않아요"),
            "like": ("좋아해요", "좋아하지 않아요"),
            "write": ("써요", "쓰지 않아요"),
            "cook": ("요리해요", "요리하지 않아요"),
            "open": ("열어요", "열지 않아요"),
        },
        objects={
            "bread": "빵",
            "apple": "사과",
            "fish": "생선",
            "cake": "케이크",
            "soup": "수프",
            "newspaper": "신문",
            "book": "책",
            "letter": "편지",
            "water": "물",
            "coffee": "커피",
            "tea": "차",
            "door": "문",
            "window": "창문",
        },
        adjuncts={
            "garden": "정원에서",
            "morning": "매일 아침",
            "home": "집에서",
            "kitchen": "부엌에서",
            "evening": "저녁에",
        },
        order=_korean,
    ),
    "zh": Lexicon(
        subjects={
            "man": ("年老的男人", "男人"),
            "woman": ("年轻的女人", "女人"),
            "girl": ("小女孩", "女孩"),
            "teacher": ("疲倦的老师", "老师"),
            "student": ("饥饿的学生", "学生"),
            "doctor": ("快乐的医生", "医生"),
            "farmer": ("年轻的农民", "农民"),
            "grandmother": ("和蔼的奶奶", "奶奶"),
            "boy": ("小男孩", "男孩"),
            "cook": ("忙碌的厨师", "厨师"),
        },
        verbs={
            "eat": ("吃", "不吃"),
            "read": ("读", "不读"),
            "drink": ("喝", "不喝"),
            "buy": ("买", "不买"),
            "like": ("喜欢", "不喜欢"),
            "write": ("写", "不写"),
            "cook": ("做", "不做"),
            "open": ("打开", "不打开"),
        },
        objects={
            "bread": "面包",
            "apple": "苹果",
            "fish": "鱼",
            "cake": "蛋糕",
            "soup": "汤",
            "newspaper": "报纸",
            "book": "书",
            "letter": "信",
            "water": "水",
            "coffee": "咖啡",
            "tea": "茶",
            "door": "门",
            "window": "窗户",
        },
        adjuncts={
            "garden": "在花园里",
            "morning": "每天早上",
            "home": "在家里",
            "kitchen": "在厨房里",
            "evening": "晚上",
        },
        order=_chinese,
    ),
}
LANGUAGES = tuple(LEXICONS)
SUBJECTS = tuple(LEXICONS["en"].subjects)
VERBS = tuple(VERB_OBJECTS)
ADJUNCTS = tuple(LEXICONS["en"].adjuncts)


@dataclass(frozen=True)
class Clause:
    subject: str
    verb: str
    obj: str
    adjective: bool = False
    adjunct: str | None = None
    negated: bool = False


def realize(language: str, clause: Clause) -> str:
    lexicon = LEXICONS[language]
    subject = lexicon.subjects[clause.subject][0 if clause.adjective else 1]
    verb = lexicon.verbs[clause.verb][1 if clause.negated else 0]
    adjunct = lexicon.adjuncts[clause.adjunct] if clause.adjunct else None
    return lexicon.order(subject, verb, lexicon.objects[clause.obj], adjunct, clause.negated)


def check_lexicons() -> None:
    objects = {obj for objs in VERB_OBJECTS.values() for obj in objs}
    expected = (set(SUBJECTS), set(VERBS), objects, set(ADJUNCTS))
    for language, lexicon in LEXICONS.items():
        got = (set(lexicon.subjects), set(lexicon.verbs), set(lexicon.objects), set(lexicon.adjuncts))
        if got != expected:
            raise ValueError(f"lexicon {language!r} does not cover the same concepts as 'en'")


# --------------------------------------------------------------------------------------------------------
# Corpus and NLI pairs


def random_clause(rng: random.Random, verb: str | None = None) -> Clause:
    verb = verb or rng.choice(VERBS)
    return Clause(
        subject=rng.choice(SUBJECTS),
        verb=verb,
        obj=rng.choice(VERB_OBJECTS[verb]),
        adjective=rng.random() < 0.5,
        adjunct=rng.choice(ADJUNCTS) if rng.random() < 0.6 else None,
        negated=rng.random() < 0.25,
    )


def build_corpus(rng: random.Random) -> list[str]:
    """Each verb with each of its objects, affirmative and negated, and each subject with and without its
    adjective, in every language: every word form of the lexicon occurs."""
    sentences = []
    for language in LANGUAGES:
        for verb, objects in VERB_OBJECTS.items():
            for obj in objects:
                for negated in (False, True):
                    clause = replace(random_clause(rng, verb), obj=obj, negated=negated)
                    sentences.append(realize(language, clause))
        for subject in SUBJECTS:
            for adjective in (False, True):
                clause = replace(random_clause(rng), subject=subject, adjective=adjective)
                sentences.append(realize(language, clause))
    return sentences


def _other(rng: random.Random, choices: Sequence[str], exclude: str) -> str:
    return rng.choice([choice for choice in choices if choice != exclude])


def make_pair(rng: random.Random, label: str) -> tuple[Clause, Clause]:
    """entailment: the premise, or (when affirmative) the premise without its adjective and/or adjunct;
    contradiction: that hypothesis negated (or affirmed); neutral: another subject doing another thing."""
    premise = random_clause(rng)
    if label == "neutral":
        verb = _other(rng, VERBS, premise.verb)
        subject = _other(rng, SUBJECTS, premise.subject)
        return premise, replace(random_clause(rng, verb), subject=subject, adjunct=None)
    entailed = premise
    if not premise.negated:  # dropping words keeps an affirmative clause true, not a negated one
        entailed = replace(
            premise,
            adjective=premise.adjective and rng.random() < 0.5,
            adjunct=premise.adjunct if rng.random() < 0.5 else None,
        )
    if label == "entailment":
        return premise, entailed
    return premise, replace(entailed, negated=not premise.negated)


@dataclass(frozen=True)
class Pair:
    premise: str
    hypothesis: str
    label: str


def make_pairs(rng: random.Random, count: int, exclude: set[tuple[str, str]]) -> list[Pair]:
    """``count`` pairs, labels in turn, languages at random, none of them in ``exclude``."""
    pairs: list[Pair] = []
    while len(pairs) < count:
        language = rng.choice(LANGUAGES)
        label = ID2LABEL[len(pairs) % len(ID2LABEL)]
        premise, hypothesis = make_pair(rng, label)
        pair = Pair(realize(language, premise), realize(language, hypothesis), label)
        if (pair.premise, pair.hypothesis) not in exclude:
            pairs.append(pair)
    return pairs


# --------------------------------------------------------------------------------------------------------
# Samples: held out of training; the contract suite's NLI fixtures.

C, N = Clause, partial(Clause, negated=True)
ENT, NEU, CON = ID2LABEL.values()
SAMPLE_SPECS: tuple[tuple[str, str, Clause, Clause], ...] = (
    ("en", ENT, C("man", "read", "newspaper", True, "garden"), C("man", "read", "newspaper")),
    ("en", CON, C("woman", "drink", "coffee", True, "morning"), N("woman", "drink", "coffee")),
    ("en", NEU, C("teacher", "open", "window", True), C("cook", "buy", "fish")),
    ("en", CON, N("boy", "eat", "apple"), C("boy", "eat", "apple")),
    ("de", ENT, C("woman", "buy", "bread", True, "evening"), C("woman", "buy", "bread")),
    ("de", CON, C("boy", "read", "book", False, "home"), N("boy", "read", "book")),
    ("de", NEU, C("grandmother", "cook", "soup", False, "kitchen"), C("student", "drink", "tea")),
    ("de", ENT, C("doctor", "write", "letter", True, "morning"), C("doctor", "write", "letter")),
    ("fr", ENT, C("girl", "eat", "cake", True, "home"), C("girl", "eat", "cake")),
    ("fr", CON, C("farmer", "open", "door", False, "morning"), N("farmer", "open", "door")),
    ("fr", NEU, C("cook", "cook", "fish", False, "kitchen"), C("man", "read", "book")),
    ("fr", NEU, C("student", "like", "coffee"), C("grandmother", "write", "letter")),
    ("es", ENT, C("teacher", "read", "book", True, "evening"), C("teacher", "read", "book")),
    ("es", CON, C("grandmother", "drink", "tea", False, "garden"), N("grandmother", "drink", "tea")),
    ("es", NEU, C("boy", "open", "window"), C("doctor", "eat", "cake")),
    ("es", CON, N("cook", "buy", "fish"), C("cook", "buy", "fish")),
    ("ko", ENT, C("student", "eat", "bread", True, "morning"), C("student", "eat", "bread")),
    ("ko", CON, C("man", "drink", "water", False, "home"), N("man", "drink", "water")),
    ("ko", NEU, C("woman", "read", "newspaper", False, "garden"), C("farmer", "cook", "soup")),
    ("ko", ENT, C("girl", "like", "apple", True), C("girl", "like", "apple")),
    ("zh", ENT, C("doctor", "drink", "coffee", True, "morning"), C("doctor", "drink", "coffee")),
    ("zh", CON, C("student", "buy", "book", False, "evening"), N("student", "buy", "book")),
    ("zh", NEU, C("man", "cook", "fish", False, "kitchen"), C("girl", "open", "door")),
    ("zh", CON, N("teacher", "write", "letter"), C("teacher", "write", "letter")),
)


def build_samples() -> list[Sample]:
    return [
        Sample(f"s{number:02d}", language, realize(language, premise), realize(language, hypothesis), label)
        for number, (language, label, premise, hypothesis) in enumerate(SAMPLE_SPECS, start=1)
    ]


def write_samples(samples: Sequence[Sample], path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    lines = [json.dumps(asdict(sample), ensure_ascii=False) for sample in samples]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


# --------------------------------------------------------------------------------------------------------
# Tokenizer


def train_tokenizer(corpus: Sequence[str], vocab_size: int) -> tuple[Tokenizer, int]:
    """A Unigram (SentencePiece-style) tokenizer laid out like mDeBERTa-v3's, and its count of trained pieces.

    ``vocab_size`` counts every id, [MASK] included. Unigram keeps only the pieces that this small corpus
    supports (about 550; sentencepiece's own trainer finds the same), so reserved pieces fill up the rest.
    """
    tokenizer = Tokenizer(models.Unigram())
    tokenizer.normalizer = normalizers.NFKC()
    tokenizer.pre_tokenizer = pre_tokenizers.Metaspace(replacement="▁", prepend_scheme="always")
    tokenizer.decoder = decoders.Metaspace(replacement="▁", prepend_scheme="always")
    trainer = trainers.UnigramTrainer(
        vocab_size=vocab_size - 1, special_tokens=list(SPECIAL_TOKENS), unk_token="[UNK]", show_progress=False
    )
    tokenizer.train_from_iterator(corpus, trainer=trainer)
    trained = unigram_vocab(tokenizer)
    reserved = reserved_pieces(tokenizer, corpus, trained, vocab_size - 1 - len(trained))
    unk_id = SPECIAL_TOKENS.index("[UNK]")
    tokenizer.model = models.Unigram(trained + reserved, unk_id=unk_id, byte_fallback=False)
    tokenizer.add_special_tokens([MASK_TOKEN])
    tokenizer.post_processor = processors.TemplateProcessing(
        single="[CLS] $A [SEP]",
        pair="[CLS] $A [SEP] $B:1 [SEP]:1",
        special_tokens=[(token, SPECIAL_TOKENS.index(token)) for token in ("[CLS]", "[SEP]")],
    )
    if [tokenizer.token_to_id(token) for token in SPECIAL_TOKENS] != list(range(len(SPECIAL_TOKENS))):
        raise RuntimeError("special token ids differ from mDeBERTa's [PAD]=0 [CLS]=1 [SEP]=2 [UNK]=3")
    return tokenizer, len(trained)


def unigram_vocab(tokenizer: Tokenizer) -> list[tuple[str, float]]:
    """The trained pieces in a form that does not change from run to run: specials first, then by score.

    The trainer's output does: it sums scores in hash-map order (so they differ in their last bits), and
    gives the characters it keeps without a score ``min_score + k * 1e-4``, k following hash-set order. So
    scores are rounded to 1e-6, and those characters all get ``min_score``.
    """
    vocab = [(str(piece), float(score)) for piece, score in json.loads(tokenizer.to_str())["model"]["vocab"]]
    specials, pieces = vocab[: len(SPECIAL_TOKENS)], vocab[len(SPECIAL_TOKENS) :]
    if [piece for piece, _ in specials] != list(SPECIAL_TOKENS):
        raise RuntimeError(f"the trainer did not put {SPECIAL_TOKENS} first")
    floor = min(score for _, score in pieces)
    ceiling = floor + 1e-4 * sum(len(piece) == 1 for piece, _ in pieces)
    canonical = [(piece, round(floor if score <= ceiling else score, 6)) for piece, score in pieces]
    return specials + sorted(canonical, key=lambda entry: (-entry[1], entry[0]))


def reserved_pieces(
    tokenizer: Tokenizer, corpus: Sequence[str], trained: Sequence[tuple[str, float]], count: int
) -> list[tuple[str, float]]:
    """The corpus's most frequent substrings that Unigram left out, scored so that they are never chosen.

    A piece of n characters scores below n times the lowest trained score, and every character of the
    corpus is a trained piece, so a segmentation using a reserved piece always loses to one without: they
    only widen the id space, like the many pieces of mDeBERTa's vocabulary that a given text never uses.
    """
    known = {piece for piece, _ in trained}
    floor = min(score for piece, score in trained if piece not in SPECIAL_TOKENS)
    counts: Counter[str] = Counter()
    for sentence in corpus:
        for word, _ in tokenizer.pre_tokenizer.pre_tokenize_str(tokenizer.normalizer.normalize_str(sentence)):
            for start in range(len(word)):
                for end in range(start + 2, min(len(word), start + 8) + 1):
                    counts[word[start:end]] += 1
    candidates = sorted(set(counts) - known, key=lambda piece: (-counts[piece], piece))
    return [(piece, len(piece) * floor - 1.0) for piece in candidates[: max(0, count)]]


# --------------------------------------------------------------------------------------------------------
# Model and training


def build_config(vocab_size: int, args: argparse.Namespace) -> DebertaV2Config:
    """mDeBERTa-v3-base's configuration, scaled down in width, depth and vocabulary."""
    # A dict: DebertaV2Config takes several of these (position_buckets, share_att_key...) through **kwargs.
    settings: dict[str, Any] = dict(
        vocab_size=vocab_size,
        hidden_size=args.hidden,
        num_hidden_layers=args.layers,
        num_attention_heads=args.heads,
        intermediate_size=4 * args.hidden,
        hidden_act="gelu",
        # No dropout and a wider initialisation than mDeBERTa's 0.02: both make this tiny model learn the
        # task from scratch in a few thousand steps (with 0.02 it sits at chance on entailment/neutral).
        hidden_dropout_prob=0.0,
        attention_probs_dropout_prob=0.0,
        initializer_range=args.init_range,
        max_position_embeddings=MAX_LENGTH,
        type_vocab_size=0,
        layer_norm_eps=1e-7,
        relative_attention=True,
        max_relative_positions=-1,
        position_buckets=256,
        norm_rel_ebd="layer_norm",
        share_att_key=True,
        pos_att_type=["p2c", "c2p"],
        position_biased_input=False,
        pooler_hidden_size=args.hidden,
        pooler_dropout=0,
        pooler_hidden_act="gelu",
        pad_token_id=SPECIAL_TOKENS.index("[PAD]"),
        num_labels=len(ID2LABEL),
        id2label=ID2LABEL,
        label2id=LABEL2ID,
    )
    return DebertaV2Config(**settings)


@dataclass(frozen=True)
class Encoded:
    input_ids: torch.Tensor
    attention_mask: torch.Tensor
    labels: torch.Tensor

    def rows(self, count: int) -> Encoded:
        return Encoded(self.input_ids[:count], self.attention_mask[:count], self.labels[:count])

    def select(self, rows: torch.Tensor) -> Encoded:
        return Encoded(self.input_ids[rows], self.attention_mask[rows], self.labels[rows])

    def columns(self, length: int) -> Encoded:
        return Encoded(self.input_ids[:, :length], self.attention_mask[:, :length], self.labels)


def encode(tokenizer: Tokenizer, pairs: Sequence[TextPair], labels: Sequence[str], length: int) -> Encoded:
    input_ids, attention_mask = encode_pairs(padded(tokenizer, length), pairs)
    label_ids = torch.tensor([LABEL2ID[label] for label in labels], dtype=torch.long)
    return Encoded(torch.from_numpy(input_ids), torch.from_numpy(attention_mask), label_ids)


def encode_training_pairs(tokenizer: Tokenizer, pairs: Sequence[Pair]) -> Encoded:
    """Padded only to the longest pair (rounded up to 16), not to 512: padding is masked out anyway."""
    texts = [(pair.premise, pair.hypothesis) for pair in pairs]
    longest = max(len(encoding.ids) for encoding in tokenizer.encode_batch(texts))
    return encode(tokenizer, texts, [pair.label for pair in pairs], min(MAX_LENGTH, -(-longest // 16) * 16))


def linear_schedule(steps: int, warmup: int) -> Callable[[int], float]:
    return lambda step: min(1.0, (step + 1) / warmup) * max(0.0, (steps - step) / steps)


def batches(data: Encoded, batch_size: int, generator: torch.Generator) -> Iterator[Encoded]:
    """Endless batches of pairs of similar length, each cut to its longest pair: about half the padding
    (and time) of random batches. Lengths get a random jitter so that batches still mix lengths a little."""
    lengths = data.attention_mask.sum(-1)
    while True:
        order = torch.argsort(lengths + 8 * torch.rand(len(lengths), generator=generator), stable=True)
        chunks = torch.split(order, batch_size)[: len(order) // batch_size]
        for index in torch.randperm(len(chunks), generator=generator).tolist():
            rows = chunks[index]
            length = int(lengths[rows].max())
            yield data.select(rows).columns(length)


def train(model: DebertaV2ForSequenceClassification, data: Encoded, args: argparse.Namespace) -> None:
    optimizer = torch.optim.AdamW(model.parameters(), lr=args.lr, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, linear_schedule(args.steps, args.steps // 10))
    stream = batches(data, args.batch_size, torch.Generator().manual_seed(args.seed))
    model.train()
    loss_sum = correct_sum = 0.0
    for step in range(1, args.steps + 1):
        batch = next(stream)
        output = model(input_ids=batch.input_ids, attention_mask=batch.attention_mask, labels=batch.labels)
        output.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        optimizer.zero_grad()
        loss_sum += output.loss.item()
        correct_sum += (output.logits.argmax(-1) == batch.labels).float().mean().item()
        if step % args.log_every == 0:
            loss, correct = loss_sum / args.log_every, correct_sum / args.log_every
            print(f"step {step:5d}  loss {loss:.4f}  accuracy {correct:.3f}")
            loss_sum = correct_sum = 0.0
    model.train(False)


@torch.no_grad()
def torch_logits(model: DebertaV2ForSequenceClassification, data: Encoded) -> Float32Array:
    chunks = zip(torch.split(data.input_ids, 16), torch.split(data.attention_mask, 16), strict=True)
    logits = torch.cat([model(input_ids=ids, attention_mask=mask).logits for ids, mask in chunks])
    return np.asarray(logits.numpy(), dtype=np.float32)


def accuracy(model: DebertaV2ForSequenceClassification, data: Encoded) -> float:
    return float((torch_logits(model, data).argmax(-1) == data.labels.numpy()).mean())


# --------------------------------------------------------------------------------------------------------
# ONNX export and checks


class LogitsOnly(torch.nn.Module):
    """The served signature: (input_ids, attention_mask) -> logits; no token_type_ids (type_vocab_size=0)."""

    def __init__(self, model: DebertaV2ForSequenceClassification) -> None:
        super().__init__()
        self.model = model

    def forward(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        logits: torch.Tensor = self.model(input_ids=input_ids, attention_mask=attention_mask).logits
        return logits


def export_onnx(model: DebertaV2ForSequenceClassification, example: Encoded, path: Path) -> None:
    # The exporter puts the module back in the train/eval mode it found, recursively: a fresh wrapper is in
    # train mode and would switch ``model``'s dropout layers back on.
    wrapper = LogitsOnly(model).eval()
    with warnings.catch_warnings():
        # Expected: the legacy exporter is deprecated, and the tracer warns about values it records as
        # constants, which are constant here (head size, bucket sizes, query length == key length).
        warnings.simplefilter("ignore", DeprecationWarning)
        warnings.filterwarnings("ignore", module=r"transformers\.models\.deberta_v2\.")
        torch.onnx.export(
            wrapper,
            (example.input_ids, example.attention_mask),
            str(path),
            input_names=["input_ids", "attention_mask"],
            output_names=["logits"],
            dynamic_axes={name: {0: "batch"} for name in ("input_ids", "attention_mask", "logits")},
            opset_version=ONNX_OPSET,
            do_constant_folding=True,
            dynamo=False,
        )
    onnx.checker.check_model(str(path), full_check=True)
    check_signature(onnx.load(str(path)))


def _signature(values: Sequence[onnx.ValueInfoProto]) -> list[tuple[str, int, list[str | int]]]:
    signature: list[tuple[str, int, list[str | int]]] = []
    for value in values:
        tensor = value.type.tensor_type
        dims: list[str | int] = [dim.dim_param or dim.dim_value for dim in tensor.shape.dim]
        signature.append((value.name, tensor.elem_type, dims))
    return signature


def check_signature(model: onnx.ModelProto) -> None:
    int64, fp32 = onnx.TensorProto.INT64, onnx.TensorProto.FLOAT
    inputs = [(name, int64, ["batch", MAX_LENGTH]) for name in ("input_ids", "attention_mask")]
    outputs = [("logits", fp32, ["batch", len(ID2LABEL)])]
    got = (_signature(model.graph.input), _signature(model.graph.output))
    if got != (inputs, outputs):
        raise RuntimeError(f"unexpected ONNX signature: {got}")


def onnx_vs_torch(model: DebertaV2ForSequenceClassification, path: Path, data: Encoded) -> float:
    """Largest |ONNX - torch| logit difference at batch 1 and batch 8 (full length)."""
    session = open_session(path)
    worst = 0.0
    for batch in (1, 8):
        subset = data.rows(batch)
        inputs = {"input_ids": subset.input_ids.numpy(), "attention_mask": subset.attention_mask.numpy()}
        got = session.run(["logits"], inputs)[0]
        if got.shape != (batch, len(ID2LABEL)):
            raise RuntimeError(f"ONNX logits have shape {got.shape} at batch {batch}")
        worst = max(worst, float(np.abs(got - torch_logits(model, subset)).max()))
    return worst


# --------------------------------------------------------------------------------------------------------
# Outputs


@dataclass(frozen=True)
class Facts:
    """What the README reports; all of it reproducible (no timings)."""

    config: DebertaV2Config
    parameters: int
    corpus_sentences: int
    trained_pieces: int
    training_length: int
    dev_accuracy: float
    padding_diff: float
    onnx_diff: float
    rows: list[Row]


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def write_json(path: Path, payload: object) -> None:
    path.write_text(json.dumps(payload, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")


def _command(args: argparse.Namespace) -> str:
    out = Path(os.path.relpath(args.out.resolve(), REPO_ROOT)).as_posix()
    samples = Path(os.path.relpath(args.samples.resolve(), REPO_ROOT)).as_posix()
    return f"python model_repos/tools/make_tiny_mdeberta.py --out {out} --samples {samples}"


def _fill(text: str, indent: str = "") -> str:
    """One paragraph (or list item) of the README, wrapped at 110 columns."""
    return textwrap.fill(" ".join(text.split()), width=110, subsequent_indent=indent)


def _readme_files(out: Path, config: DebertaV2Config) -> str:
    model, tokenizer = out / "model.onnx", out / "tokenizer.json"
    rows = [
        "| file | what | sha256 |",
        "|---|---|---|",
        f"| `model.onnx` | ONNX opset {ONNX_OPSET}, {model.stat().st_size:,} bytes | `{sha256(model)}` |",
        f"| `tokenizer.json` | Unigram, {config.vocab_size:,} ids | `{sha256(tokenizer)}` |",
        '| `labels.json` | `{"id2label": ...}` | |',
        "| `config.json` | the `DebertaV2Config` it was built from | |",
    ]
    return "\n".join(rows)


def _readme_model(facts: Facts) -> list[str]:
    config = facts.config
    labels = ", ".join(f"{index}={label}" for index, label in ID2LABEL.items())
    signature = [
        f"""- inputs `input_ids`, `attention_mask`: INT64 `[batch, {MAX_LENGTH}]`, batch dynamic (`batch`);
        no `token_type_ids` (`type_vocab_size=0`, as in mDeBERTa-v3)""",
        f"- output `logits`: FP32 `[batch, {len(ID2LABEL)}]`; {labels}",
        f"""- `tokenizer.json` sets no padding (like the real one): callers pad every pair to {MAX_LENGTH},
        e.g. `enable_padding(length={MAX_LENGTH}, pad_id=0, pad_token="[PAD]")`""",
    ]
    architecture = f"""
        `DebertaV2ForSequenceClassification`, {facts.parameters:,} parameters: hidden {config.hidden_size},
        {config.num_hidden_layers} layers, {config.num_attention_heads} heads, intermediate
        {config.intermediate_size}, vocabulary {config.vocab_size}. mDeBERTa-v3's attention settings:
        `relative_attention=True`, `pos_att_type=["p2c", "c2p"]`, `position_buckets=256`,
        `max_relative_positions=-1`, `norm_rel_ebd="layer_norm"`, `share_att_key=True`,
        `position_biased_input=False`, `max_position_embeddings={MAX_LENGTH}`, `type_vocab_size=0`."""
    tokenizer = f"""
        Tokenizer: NFKC, Metaspace (`▁`, prepended), Unigram; `[PAD]`=0, `[CLS]`=1, `[SEP]`=2, `[UNK]`=3,
        `[MASK]`={config.vocab_size - 1} (last, as in mDeBERTa). Pairs are `[CLS] premise [SEP] hypothesis
        [SEP]` (token_type_ids 0/1, which the model does not take). Unigram kept {facts.trained_pieces}
        pieces from its {facts.corpus_sentences}-sentence corpus (sentencepiece's trainer keeps as many);
        ids {facts.trained_pieces}..{config.vocab_size - 2} are reserved pieces that the tokenizer never
        emits (scored below any segmentation into trained pieces)."""
    return [
        "## Signature",
        "\n".join(_fill(item, "  ") for item in signature),
        "## Architecture",
        _fill(architecture),
        _fill(tokenizer),
    ]


def _readme_training(args: argparse.Namespace, facts: Facts) -> list[str]:
    training = f"""
        {args.pairs:,} synthetic pairs: entailment = the premise, or the premise without its adjective
        and/or adjunct; contradiction = that sentence negated (or, for a negated premise, affirmed);
        neutral = another subject doing something else. {args.steps:,} steps of batch {args.batch_size},
        AdamW, lr {args.lr} (linear warm-up and decay), init range {args.init_range}, no dropout, seed
        {args.seed}. Pairs were padded to {facts.training_length} tokens while training; padding is
        masked, so the logits at {MAX_LENGTH} are the same (max abs difference on the samples:
        {facts.padding_diff:.1e}). Accuracy on held-out generated pairs: {facts.dev_accuracy:.4f}."""
    limits = """
        Out of scope: neutral pairs that share the subject or the action, hypotheses that add details,
        paraphrases, and any text outside the templates."""
    return ["## Training", _fill(training), _fill(limits)]


def _readme_check(facts: Facts) -> list[str]:
    languages = ", ".join(sorted({row.sample.language for row in facts.rows}))
    check = f"""
        `model_repos/samples/nli_samples.jsonl`: {len(facts.rows)} pairs in {languages}; no training pair
        is one of them. ONNX Runtime (CPU) predicts every one right at length {MAX_LENGTH}, with a minimum
        top-1 minus top-2 logit gap of **{min(row.gap for row in facts.rows):.3f}** (required: 1.0). ONNX
        Runtime vs torch, batch 1 and 8: max abs difference {facts.onnx_diff:.1e}."""
    command = "    python model_repos/tools/check_tiny_mdeberta.py   # onnxruntime, tokenizers and numpy only"
    return ["## Check", _fill(check), command]


def _readme_regenerate(args: argparse.Namespace) -> list[str]:
    torch_version = torch.__version__.split("+")[0]
    install = f"    pip install torch=={torch_version} transformers=={transformers.__version__}"
    versions = f"""
        Generated with torch {torch.__version__}, transformers {transformers.__version__}, tokenizers
        {tokenizers.__version__}, onnx {onnx.__version__}, onnxruntime {onnxruntime.__version__},
        {args.threads} torch thread(s). Seeded and deterministic: two runs with these versions on one
        machine give the same bytes. Other versions or CPUs may round differently and so give other bytes;
        the generator still checks every sample and exits 1 if one is wrong or below the gap."""
    return ["## Regenerate", f"{install}\n    {_command(args)}", _fill(versions)]


def render_readme(args: argparse.Namespace, facts: Facts) -> str:
    intro = """
        A tiny stand-in for `mDeBERTa-v3-base-xnli` (the seed scenario's NLI classifier), built from scratch
        by `model_repos/tools/make_tiny_mdeberta.py`: no pretrained weights, synthetic data only. Same
        architecture family, served signature and label order as the real model, but it only knows the
        template sentences it was trained on (en, de, fr, es, ko, zh): "subject verb object [adjunct]",
        affirmative or negated."""
    blocks = [
        "# tiny-mdeberta",
        _fill(intro),
        "## Files",
        _readme_files(args.out, facts.config),
        *_readme_model(facts),
        *_readme_training(args, facts),
        *_readme_check(facts),
        *_readme_regenerate(args),
    ]
    return "\n\n".join(blocks) + "\n"


def write_metadata(args: argparse.Namespace, facts: Facts) -> None:
    id2label = {str(index): label for index, label in ID2LABEL.items()}
    write_json(args.out / "labels.json", {"id2label": id2label})
    write_json(args.out / "config.json", json.loads(facts.config.to_json_string(use_diff=False)))
    (args.out / "README.md").write_text(render_readme(args, facts), encoding="utf-8")


# --------------------------------------------------------------------------------------------------------


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    formatter = argparse.RawDescriptionHelpFormatter
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=formatter)
    parser.add_argument("--out", type=Path, default=MODEL_REPOS / "assets" / "tiny-mdeberta")
    parser.add_argument("--samples", type=Path, default=MODEL_REPOS / "samples" / "nli_samples.jsonl")
    parser.add_argument("--seed", type=int, default=20240607)
    parser.add_argument("--vocab-size", type=int, default=3000, help="all ids, [MASK] included")
    parser.add_argument("--hidden", type=int, default=64)
    parser.add_argument("--layers", type=int, default=2)
    parser.add_argument("--heads", type=int, default=2)
    parser.add_argument("--init-range", type=float, default=0.1)
    parser.add_argument("--pairs", type=int, default=24000, help="synthetic training pairs")
    parser.add_argument("--steps", type=int, default=5000)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--lr", type=float, default=1e-3)
    parser.add_argument("--threads", type=int, default=2, help="torch threads (part of what fixes the bytes)")
    parser.add_argument("--min-gap", type=float, default=1.0, help="required top-1 minus top-2 logit gap")
    parser.add_argument("--log-every", type=int, default=250)
    return parser.parse_args(argv)


def seed_everything(seed: int, threads: int) -> None:
    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    torch.set_num_threads(threads)
    torch.use_deterministic_algorithms(True)


@dataclass(frozen=True)
class TrainedTokenizer:
    tokenizer: Tokenizer
    corpus_sentences: int
    trained_pieces: int


def build_tokenizer(args: argparse.Namespace, rng: random.Random) -> TrainedTokenizer:
    corpus = build_corpus(rng)
    tokenizer, trained_pieces = train_tokenizer(corpus, args.vocab_size)
    tokenizer.save(str(args.out / "tokenizer.json"))
    ids = tokenizer.get_vocab_size()
    print(f"corpus: {len(corpus)} sentences; tokenizer: {trained_pieces} trained pieces, {ids} ids")
    return TrainedTokenizer(tokenizer, len(corpus), trained_pieces)


def fit(
    args: argparse.Namespace, tokenizer: Tokenizer, pairs: Sequence[Pair]
) -> tuple[DebertaV2ForSequenceClassification, Encoded, Encoded]:
    """The trained model, its training data and its held-out data (5% of ``pairs``)."""
    split = len(pairs) * 19 // 20
    train_data = encode_training_pairs(tokenizer, pairs[:split])
    dev_data = encode_training_pairs(tokenizer, pairs[split:])
    model = DebertaV2ForSequenceClassification(build_config(tokenizer.get_vocab_size(), args))
    parameters = sum(parameter.numel() for parameter in model.parameters())
    print(f"model: {parameters:,} parameters; training at length {train_data.input_ids.shape[1]}")
    started = time.perf_counter()
    train(model, train_data, args)
    seconds = time.perf_counter() - started
    print(f"trained in {seconds:.1f} s; held-out accuracy {accuracy(model, dev_data):.4f}")
    return model, train_data, dev_data


def check_padding(model: DebertaV2ForSequenceClassification, full: Encoded, length: int) -> float:
    """Max |logits at ``length`` - logits at the full length|: what training on shorter pairs relies on."""
    diff = float(np.abs(torch_logits(model, full.columns(length)) - torch_logits(model, full)).max())
    print(f"torch logits at length {length} vs {full.input_ids.shape[1]}: max abs diff {diff:.1e}")
    return diff


def check_onnx(model: DebertaV2ForSequenceClassification, full: Encoded, path: Path) -> float:
    export_onnx(model, full.rows(2), path)
    diff = onnx_vs_torch(model, path, full)
    print(f"ONNX Runtime vs torch (batch 1 and 8, length {full.input_ids.shape[1]}): max abs diff {diff:.1e}")
    return diff


def check_samples(out: Path, samples: Sequence[Sample]) -> list[Row]:
    """The samples as ``check_tiny_mdeberta.py`` sees them: written files, ONNX Runtime, length 512."""
    tokenizer = padded(Tokenizer.from_file(str(out / "tokenizer.json")), MAX_LENGTH)
    ids, mask = encode_pairs(tokenizer, [(sample.premise, sample.hypothesis) for sample in samples])
    return score(samples, onnx_logits(open_session(out / "model.onnx"), ids, mask), ID2LABEL)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    seed_everything(args.seed, args.threads)
    check_lexicons()
    args.out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(args.seed)

    samples = build_samples()
    write_samples(samples, args.samples)
    trained = build_tokenizer(args, rng)
    held_out = {(sample.premise, sample.hypothesis) for sample in samples}
    pairs = make_pairs(rng, args.pairs * 20 // 19, held_out)
    model, train_data, dev_data = fit(args, trained.tokenizer, pairs)

    texts = [(sample.premise, sample.hypothesis) for sample in samples]
    full = encode(trained.tokenizer, texts, [sample.label for sample in samples], MAX_LENGTH)
    training_length = train_data.input_ids.shape[1]
    padding_diff = check_padding(model, full, training_length)
    onnx_diff = check_onnx(model, full, args.out / "model.onnx")
    rows = check_samples(args.out, samples)

    facts = Facts(
        config=model.config,
        parameters=sum(parameter.numel() for parameter in model.parameters()),
        corpus_sentences=trained.corpus_sentences,
        trained_pieces=trained.trained_pieces,
        training_length=training_length,
        dev_accuracy=accuracy(model, dev_data),
        padding_diff=padding_diff,
        onnx_diff=onnx_diff,
        rows=rows,
    )
    write_metadata(args, facts)
    print(format_table(rows, args.min_gap))
    print(summary(rows, args.min_gap))
    if onnx_diff > MAX_ONNX_TORCH_DIFF:
        print(f"FAIL: ONNX Runtime and torch differ by {onnx_diff:.1e} (> {MAX_ONNX_TORCH_DIFF})")
        return 1
    return 1 if failures(rows, args.min_gap) else 0


if __name__ == "__main__":
    sys.exit(main())
